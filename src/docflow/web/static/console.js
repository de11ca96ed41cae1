// docflow console: live progress (Server-Sent Events), field boxes, and the review screen's
// word picking and keyboard shortcuts. Plain JavaScript, no build step.
"use strict";

(function () {
  const $$ = (selector, root) => Array.from((root || document).querySelectorAll(selector));

  // --- live progress -------------------------------------------------------------------------
  function follow(progress) {
    if (progress.stream) return;
    const stream = new EventSource(progress.dataset.stream);
    progress.stream = stream;
    const batchId = progress.dataset.batch;
    stream.addEventListener("progress", (event) => {
      const batch = JSON.parse(event.data);
      const done = batch.succeeded_count + batch.review_count + batch.failed_count + batch.cancelled_count;
      const percent = batch.document_count ? Math.round((100 * done) / batch.document_count) : 100;
      $$("[data-count]", progress).forEach((cell) => {
        const key = cell.dataset.count;
        cell.textContent = key === "done" ? done : batch[key];
      });
      const bar = progress.querySelector(".bar");
      bar.setAttribute("aria-valuenow", percent);
      bar.querySelector("span").style.width = percent + "%";
      $$(`[data-status="${batchId}"]`).forEach((status) => {
        status.textContent = batch.status;
        status.className = "status s-" + batch.status;
      });
    });
    stream.addEventListener("end", () => {
      stream.close();
      if (document.querySelector(`[data-reload-on-end="${batchId}"]`)) window.location.reload();
    });
    stream.addEventListener("timeout", () => stream.close());
  }

  // --- fields and boxes ----------------------------------------------------------------------
  function select(name) {
    $$(".box").forEach((box) => box.classList.toggle("selected", box.dataset.field === name));
    $$(".field-button").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.field === name)));
    $$(".field").forEach((f) => f.classList.toggle("active", f.dataset.field === name));
    $$(".field-info").forEach((info) => { info.hidden = info.dataset.field !== name; });
    const box = document.querySelector(`.box[data-field="${CSS.escape(name)}"]`);
    if (box) box.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  // --- review: words, shortcuts ----------------------------------------------------------------
  let activeField = null;

  function inputs() {
    return $$("#review-form input[data-field]");
  }

  function focusField(index) {
    const all = inputs();
    if (!all.length) return;
    const input = all[(index + all.length) % all.length];
    input.focus();
    input.select();
  }

  function addWords(container) {
    fetch(container.dataset.words, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then((response) => response.json())
      .then((body) => {
        (body.pages || []).forEach((words, index) => {
          const overlay = document.querySelector(`.page[data-page="${index + 1}"] .overlay`);
          if (!overlay) return;
          words.forEach((word) => {
            const [x0, y0, x1, y1] = word.box;
            const button = document.createElement("button");
            button.type = "button";
            button.className = "word";
            button.dataset.text = word.text;
            button.setAttribute("aria-label", "Word " + word.text);
            button.style.left = x0 * 100 + "%";
            button.style.top = y0 * 100 + "%";
            button.style.width = (x1 - x0) * 100 + "%";
            button.style.height = (y1 - y0) * 100 + "%";
            overlay.appendChild(button);
          });
        });
        container.dataset.wordsLoaded = String((body.pages || []).reduce((n, p) => n + p.length, 0));
      });
  }

  function pickWord(word, append) {
    const input = activeField || inputs()[0];
    if (!input) return;
    input.value = append && input.value ? input.value + " " + word.dataset.text : word.dataset.text;
    input.dispatchEvent(new Event("input", { bubbles: true }));
    activeField = input;
    select(input.dataset.field);
  }

  function typing(target) {
    return target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT");
  }

  function shortcut(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape" && typing(event.target)) { event.target.blur(); return; }
    if (typing(event.target)) {
      if (event.key === "Enter" && event.target.tagName === "INPUT") {
        event.preventDefault();
        focusField(inputs().indexOf(event.target) + 1);
      }
      return;
    }
    const current = activeField ? inputs().indexOf(activeField) : -1;
    if (event.key === "n") { event.preventDefault(); focusField(current + 1); }
    else if (event.key === "p") { event.preventDefault(); focusField(current - 1); }
    else if (event.key === "a") { event.preventDefault(); document.getElementById("approve").click(); }
    else if (event.key === "d") { event.preventDefault(); document.getElementById("skip-form").requestSubmit(); }
  }

  // htmx swaps part of a page (the batch list's filter and pages): the streams of the rows it
  // takes away are closed, those of the rows it brings are opened.
  document.addEventListener("htmx:beforeSwap", (event) => {
    $$("[data-stream]", event.detail.target).forEach((p) => p.stream && p.stream.close());
  });
  document.addEventListener("htmx:load", (event) => {
    $$("[data-stream]", event.detail.elt).forEach(follow);
  });

  document.addEventListener("DOMContentLoaded", () => {
    $$("[data-stream]").forEach(follow);
    document.addEventListener("click", (event) => {
      const word = event.target.closest(".word");
      if (word) { pickWord(word, event.shiftKey); return; }
      const target = event.target.closest(".box, .field-button");
      if (target) select(target.dataset.field);
    });
    document.addEventListener("focusin", (event) => {
      if (event.target.matches && event.target.matches("#review-form input[data-field]")) {
        activeField = event.target;
        select(event.target.dataset.field);
      }
    });
    const reviewing = document.querySelector(".document.reviewing[data-words]");
    if (reviewing) {
      addWords(reviewing);
      document.addEventListener("keydown", shortcut);
      const first = inputs()[0];
      if (first) { activeField = first; select(first.dataset.field); }
    }
  });
})();

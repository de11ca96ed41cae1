// docflow console: live progress (Server-Sent Events), field boxes, and the review screen's
// word picking and keyboard shortcuts. Plain JavaScript, no build step.
// The pages' Content-Security-Policy refuses style attributes in the markup: sizes and
// positions come as data attributes (`data-box`, `data-width`) and are set here, through the
// CSSOM, which the policy allows.
"use strict";

(function () {
  const $$ = (selector, root) => Array.from((root || document).querySelectorAll(selector));

  // A box in a page's normalised coordinates (0-1, origin top left), as percentages.
  function position(element, [x0, y0, x1, y1]) {
    element.style.left = x0 * 100 + "%";
    element.style.top = y0 * 100 + "%";
    element.style.width = (x1 - x0) * 100 + "%";
    element.style.height = (y1 - y0) * 100 + "%";
  }

  function place(root) {
    $$("[data-box]", root).forEach((box) => position(box, box.dataset.box.split(" ").map(Number)));
    $$("[data-width]", root).forEach((bar) => { bar.style.width = bar.dataset.width + "%"; });
  }

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
      bar.querySelector("span").dataset.width = percent;
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
  // The selected field is where a picked word goes and what `n` and `p` move from. Selecting a
  // field never puts the caret in its text box (Enter does): the keys that follow stay
  // shortcuts, never typed over the value.
  let activeField = null;

  function inputs() {
    return $$("#review-form input[data-field]");
  }

  function choose(input) {
    activeField = input;
    select(input.dataset.field);
  }

  function move(step) {
    const all = inputs();
    if (!all.length) return;
    const current = all.indexOf(activeField);
    const next = current < 0 ? (step > 0 ? 0 : all.length - 1) : current + step;
    choose(all[(next + all.length) % all.length]);
  }

  function edit(input) {
    if (!input) return;
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
            const button = document.createElement("button");
            button.type = "button";
            button.className = "word";
            button.dataset.text = word.text;
            button.setAttribute("aria-label", "Word " + word.text);
            position(button, word.box);
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
    choose(input);
  }

  function typing(target) {
    return Boolean(target) && (["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable);
  }

  function shortcut(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    const target = event.target;
    if (event.key === "Escape") {  // leaves a text box, or a word or button clicked last
      if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
      return;
    }
    const field = [target, document.activeElement].find(typing);
    if (field) {  // typing: no shortcut, only going on to the next field
      if (event.key === "Enter" && field.matches("#review-form input[data-field]")) {
        event.preventDefault();  // the next field, not the form's submission
        const all = inputs();
        edit(all[(all.indexOf(field) + 1) % all.length]);
      }
      return;
    }
    const keys = {
      n: () => move(1),
      p: () => move(-1),
      a: () => document.getElementById("approve").click(),
      d: () => document.getElementById("skip-form").requestSubmit(),
    };
    if (event.key === "Enter" && !target.closest("a, button, summary")) {
      event.preventDefault();
      edit(activeField);
    } else if (Object.hasOwn(keys, event.key)) {
      event.preventDefault();
      keys[event.key]();
    }
  }

  // Approving sends only the values the reviewer changed: a value left as it was stored is no
  // correction (the review service ignores one as well).
  function leaveOutUnchanged(event) {
    inputs().forEach((input) => {
      if (input.value === input.dataset.original) event.formData.delete(input.name);
    });
  }

  // htmx swaps part of a page (the batch list's filter and pages): the streams of the rows it
  // takes away are closed, those of the rows it brings are opened.
  document.addEventListener("htmx:beforeSwap", (event) => {
    $$("[data-stream]", event.detail.target).forEach((p) => p.stream && p.stream.close());
  });
  document.addEventListener("htmx:load", (event) => {
    place(event.detail.elt);
    $$("[data-stream]", event.detail.elt).forEach(follow);
  });

  document.addEventListener("DOMContentLoaded", () => {
    place(document);
    $$("[data-stream]").forEach(follow);
    document.addEventListener("click", (event) => {
      const word = event.target.closest(".word");
      if (word) { pickWord(word, event.shiftKey); return; }
      const target = event.target.closest(".box, .field-button");
      if (target) select(target.dataset.field);
    });
    document.addEventListener("focusin", (event) => {
      if (event.target.matches && event.target.matches("#review-form input[data-field]")) {
        choose(event.target);
      }
    });
    const reviewing = document.querySelector(".document.reviewing[data-words]");
    if (reviewing) {
      addWords(reviewing);
      document.addEventListener("keydown", shortcut);
      document.getElementById("review-form").addEventListener("formdata", leaveOutUnchanged);
      const first = inputs()[0];
      if (first) choose(first);
    }
  });
})();

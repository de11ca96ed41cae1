// docflow console: the template canvas. Boxes drawn by dragging on a page (or typed as
// coordinates), an anchor word picked by clicking it, and what each box extracts, asked of the
// server as the boxes change. Plain JavaScript, no build step.
"use strict";

(function () {
  const root = document.getElementById("canvas");
  if (!root) return;
  const data = JSON.parse(document.getElementById("canvas-data").textContent);
  const list = document.getElementById("box-list");
  const status = document.getElementById("preview-status");
  const boxes = (data.boxes || []).map((b) => Object.assign({}, b));
  const MIN_DRAG = 0.004; // of the page: smaller is a click, not a box
  let selected = boxes.length ? 0 : -1;
  let timer = null;
  let justDrew = false;
  let asked = 0;

  const round = (v) => Math.round(Math.min(1, Math.max(0, v)) * 10000) / 10000;

  function overlayOf(page) {
    return root.querySelector(`.overlay[data-page="${page}"]`);
  }

  // --- the words of each page, as buttons (a click picks the anchor) -----------------------
  (data.words || []).forEach((words, index) => {
    const overlay = overlayOf(index + 1);
    if (!overlay) return;
    words.forEach((word) => {
      const [x0, y0, x1, y1] = word.box;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "cword";
      button.dataset.text = word.text;
      button.dataset.box = JSON.stringify(word.box);
      button.setAttribute("aria-label", "Anchor word " + word.text);
      place(button, [x0, y0, x1, y1]);
      overlay.appendChild(button);
    });
  });

  function place(element, box) {
    const [x0, y0, x1, y1] = box;
    element.style.left = x0 * 100 + "%";
    element.style.top = y0 * 100 + "%";
    element.style.width = (x1 - x0) * 100 + "%";
    element.style.height = (y1 - y0) * 100 + "%";
  }

  function coords(box) {
    return [box.box.x0, box.box.y0, box.box.x1, box.box.y1];
  }

  function freeName() {
    const names = new Set(boxes.map((b) => b.name));
    for (let n = 1; ; n += 1) if (!names.has("field_" + n)) return "field_" + n;
  }

  // --- drawing ---------------------------------------------------------------------------------
  let drag = null;

  function point(overlay, event) {
    const r = overlay.getBoundingClientRect();
    return [round((event.clientX - r.left) / r.width), round((event.clientY - r.top) / r.height)];
  }

  root.querySelectorAll(".overlay.draw").forEach((overlay) => {
    overlay.addEventListener("pointerdown", (event) => {
      if (event.button !== 0) return;
      const [x, y] = point(overlay, event);
      const band = document.createElement("div");
      band.className = "band";
      overlay.appendChild(band);
      drag = { overlay, x, y, band, moved: false };
      event.preventDefault();
    });
  });

  document.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const [x, y] = point(drag.overlay, event);
    const box = [Math.min(drag.x, x), Math.min(drag.y, y), Math.max(drag.x, x), Math.max(drag.y, y)];
    drag.moved = drag.moved || box[2] - box[0] > MIN_DRAG || box[3] - box[1] > MIN_DRAG;
    place(drag.band, box);
  });

  document.addEventListener("pointerup", (event) => {
    if (!drag) return;
    const current = drag;
    drag = null;
    current.band.remove();
    if (!current.moved) return; // a click: the word's click handler picks the anchor
    const [x, y] = point(current.overlay, event);
    const [x0, y0, x1, y1] = [Math.min(current.x, x), Math.min(current.y, y), Math.max(current.x, x), Math.max(current.y, y)];
    if (x1 - x0 <= MIN_DRAG || y1 - y0 <= MIN_DRAG) return;
    justDrew = true;
    setTimeout(() => { justDrew = false; }, 0);
    boxes.push({
      name: freeName(), type: "string", page: Number(current.overlay.dataset.page),
      box: { x0, y0, x1, y1 }, anchor: null, anchor_box: null,
    });
    selected = boxes.length - 1;
    render();
    changed();
    const name = list.querySelector(`[data-index="${selected}"] input[data-key="name"]`);
    if (name) { name.focus(); name.select(); }
  });

  root.addEventListener("click", (event) => {
    const word = event.target.closest(".cword");
    if (word) {
      event.preventDefault();
      if (justDrew) return;
      if (selected < 0 || !boxes[selected]) {
        status.textContent = "Draw or add a box first, then click its anchor word.";
        return;
      }
      const [x0, y0, x1, y1] = JSON.parse(word.dataset.box);
      const box = boxes[selected];
      box.anchor = word.dataset.text;
      box.anchor_box = { x0, y0, x1, y1 };
      box.page = Number(word.closest(".overlay").dataset.page);
      render();
      changed();
      return;
    }
    const drawn = event.target.closest(".cbox");
    if (drawn) { selected = Number(drawn.dataset.index); render(); }
  });

  // --- the boxes on the pages and in the list --------------------------------------------------
  function render() {
    renderBoxes();
    renderList();
  }

  function renderBoxes() {
    root.querySelectorAll(".cbox, .canchor").forEach((e) => e.remove());
    boxes.forEach((box, index) => {
      const overlay = overlayOf(box.page);
      if (!overlay) return;
      const drawn = document.createElement("button");
      drawn.type = "button";
      drawn.className = "cbox" + (index === selected ? " selected" : "");
      drawn.dataset.index = String(index);
      drawn.dataset.field = box.name;
      drawn.setAttribute("aria-label", "Box of field " + box.name);
      drawn.tabIndex = -1;
      place(drawn, coords(box));
      overlay.appendChild(drawn);
      if (box.anchor_box) {
        const anchor = document.createElement("div");
        anchor.className = "canchor";
        anchor.dataset.field = box.name;
        place(anchor, [box.anchor_box.x0, box.anchor_box.y0, box.anchor_box.x1, box.anchor_box.y1]);
        overlay.appendChild(anchor);
      }
    });
  }

  function input(index, key, label, value, attributes) {
    const id = `box-${index}-${key}`;
    const wrap = document.createElement("span");
    wrap.className = "coord";
    const l = document.createElement("label");
    l.htmlFor = id;
    l.textContent = label;
    const i = document.createElement("input");
    i.id = id;
    i.dataset.key = key;
    i.value = value;
    Object.entries(attributes || {}).forEach(([k, v]) => i.setAttribute(k, v));
    wrap.append(l, i);
    return wrap;
  }

  function renderList() {
    const focused = document.activeElement && document.activeElement.id;
    list.textContent = "";
    if (!boxes.length) {
      const p = document.createElement("p");
      p.className = "hint";
      p.textContent = "No boxes yet: drag on the page, or add one.";
      list.appendChild(p);
    }
    boxes.forEach((box, index) => {
      const set = document.createElement("fieldset");
      set.className = "cfield" + (index === selected ? " active" : "");
      set.dataset.index = String(index);
      set.dataset.field = box.name;
      const legend = document.createElement("legend");
      legend.textContent = "Box " + (index + 1);
      set.appendChild(legend);
      const name = input(index, "name", "Field name", box.name, { autocomplete: "off", spellcheck: "false" });
      const typeWrap = document.createElement("span");
      typeWrap.className = "coord";
      const typeLabel = document.createElement("label");
      typeLabel.htmlFor = `box-${index}-type`;
      typeLabel.textContent = "Type";
      const type = document.createElement("select");
      type.id = `box-${index}-type`;
      type.dataset.key = "type";
      data.types.forEach((t) => {
        const option = document.createElement("option");
        option.value = t;
        option.textContent = t;
        option.selected = t === box.type;
        type.appendChild(option);
      });
      typeWrap.append(typeLabel, type);
      const row = document.createElement("div");
      row.className = "coords";
      row.append(name, typeWrap, input(index, "page", "Page", box.page, { type: "number", min: "1", step: "1" }));
      set.appendChild(row);
      const numbers = document.createElement("div");
      numbers.className = "coords";
      ["x0", "y0", "x1", "y1"].forEach((k) => {
        numbers.appendChild(input(index, k, k, box.box[k], { type: "number", min: "0", max: "1", step: "0.001", inputmode: "decimal" }));
      });
      set.appendChild(numbers);
      const anchor = document.createElement("p");
      anchor.className = "anchor";
      anchor.textContent = box.anchor ? "Anchor: " : "No anchor: click a word on the page to set one.";
      if (box.anchor) {
        const word = document.createElement("strong");
        word.dataset.info = "anchor";
        word.textContent = box.anchor;
        anchor.appendChild(word);
        const clear = document.createElement("button");
        clear.type = "button";
        clear.className = "link";
        clear.dataset.action = "clear-anchor";
        clear.textContent = "clear the anchor";
        anchor.appendChild(document.createTextNode(" "));  // a button's own spaces collapse
        anchor.appendChild(clear);
      }
      set.appendChild(anchor);
      const out = document.createElement("p");
      out.className = "extracts";
      out.innerHTML = "Extracts: <output data-info='value'>…</output> <small data-info='confidence'></small>";
      set.appendChild(out);
      const actions = document.createElement("p");
      const select = document.createElement("button");
      select.type = "button";
      select.className = "secondary-plain";
      select.dataset.action = "select";
      select.textContent = index === selected ? "Selected for the anchor" : "Select for the anchor";
      select.setAttribute("aria-pressed", String(index === selected));
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "secondary";
      remove.dataset.action = "remove";
      remove.textContent = "Remove box " + (index + 1);
      actions.append(select, " ", remove);
      set.appendChild(actions);
      list.appendChild(set);
    });
    if (focused) {
      const again = document.getElementById(focused);
      if (again) again.focus();
    }
    showFound(lastFound);
  }

  list.addEventListener("change", edit);
  list.addEventListener("input", edit);
  function edit(event) {
    const set = event.target.closest(".cfield");
    const key = event.target.dataset.key;
    if (!set || !key) return;
    const box = boxes[Number(set.dataset.index)];
    const value = event.target.value;
    if (key === "name" || key === "type") box[key] = value;
    else if (key === "page") box.page = Number(value) || 1;
    else box.box[key] = Number(value);
    if (event.type === "change") render();
    else renderBoxes(); // the list stays as typed in
    changed();
  }

  list.addEventListener("click", (event) => {
    const action = event.target.dataset.action;
    const set = event.target.closest(".cfield");
    if (!action || !set) return;
    const index = Number(set.dataset.index);
    if (action === "remove") {
      boxes.splice(index, 1);
      selected = Math.min(selected, boxes.length - 1);
    } else if (action === "clear-anchor") {
      boxes[index].anchor = null;
      boxes[index].anchor_box = null;
    } else if (action === "select") {
      selected = index;
    }
    render();
    changed();
  });

  document.getElementById("add-box").addEventListener("click", () => {
    boxes.push({ name: freeName(), type: "string", page: 1, box: { x0: 0.1, y0: 0.1, x1: 0.3, y1: 0.14 }, anchor: null, anchor_box: null });
    selected = boxes.length - 1;
    render();
    changed();
    const name = list.querySelector(`[data-index="${selected}"] input[data-key="name"]`);
    if (name) name.focus();
  });

  // --- live preview ------------------------------------------------------------------------------
  let lastFound = {};

  function showFound(found) {
    list.querySelectorAll(".cfield").forEach((set) => {
      const box = boxes[Number(set.dataset.index)];
      const got = box && found[box.name];
      const output = set.querySelector("[data-info='value']");
      const confidence = set.querySelector("[data-info='confidence']");
      if (!output) return;
      if (got === undefined) { output.textContent = "…"; confidence.textContent = ""; return; }
      output.textContent = got && got.value !== null ? got.value : "nothing";
      confidence.textContent = got ? Math.round(got.confidence * 100) + "%" + (got.errors.length ? " · " + got.errors.join("; ") : "") : "";
    });
  }

  function changed() {
    document.getElementById("boxes-field").value = JSON.stringify(boxes);
    clearTimeout(timer);
    timer = setTimeout(preview, 250);
  }

  function preview() {
    if (!boxes.length) { lastFound = {}; showFound(lastFound); return; }
    const mine = ++asked;
    status.textContent = "Reading the boxes…";
    fetch(root.dataset.preview, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": root.dataset.csrf },
      body: JSON.stringify({ document_id: root.dataset.document, boxes }),
    })
      .then((response) => response.json().then((body) => ({ ok: response.ok, body })))
      .then(({ ok, body }) => {
        if (mine !== asked) return;
        if (!ok) {
          const errors = (body.errors || []).map((e) => (e.field ? e.field + ": " : "") + e.message);
          status.textContent = "Not previewed: " + (errors.length ? errors.join("; ") : body.detail || body.title);
          return;
        }
        lastFound = body.fields || {};
        status.textContent = body.error ? "The sample cannot be read: " + body.error : "Each box's value, as it reads now.";
        showFound(lastFound);
      })
      .catch(() => { if (mine === asked) status.textContent = "The preview failed: try again."; });
  }

  document.getElementById("canvas-form").addEventListener("submit", () => {
    document.getElementById("boxes-field").value = JSON.stringify(boxes);
  });

  render();
  changed();
})();

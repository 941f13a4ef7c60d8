// Building the page from data without ever parsing data as HTML: every text goes in as a text node.

/**
 * h("button", {type: "button", onclick: f}, "Pin") -> <button type="button">Pin</button>.
 * Attributes: `class`, `for`, `on<event>` handlers, booleans (true sets, false/null omits), `dataset`.
 * Children: strings, numbers, nodes, arrays of those; null and false are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const svg = tag.startsWith("svg:");
  const el = svg
    ? document.createElementNS("http://www.w3.org/2000/svg", tag.slice(4))
    : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (name === "value" && !svg) {
      el.value = value;
    } else if (name === "checked" && !svg) {
      el.checked = Boolean(value);
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace everything inside `el` with `children`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled form field: the label wraps the control so a click or a screen reader finds it. */
export function field(label, control, hint = null) {
  return h("label", { class: "field" }, h("span", { class: "field-label" }, label), control,
    hint ? h("span", { class: "hint" }, hint) : null);
}

/** A <select> from [value, text] pairs (or plain strings). */
export function select(attrs, options, current = "") {
  return h("select", attrs, options.map((o) => {
    const [value, text] = Array.isArray(o) ? o : [o, o];
    return h("option", { value, selected: value === current }, text);
  }));
}

export function button(text, onclick, attrs = {}) {
  return h("button", { type: "button", onclick, ...attrs }, text);
}

/** Dates as the API gives them (ISO 8601, UTC), shown in UTC so every reader sees the same time. */
export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
}

export function num(value, digits = 3) {
  return typeof value === "number" ? value.toFixed(digits).replace(/\.?0+$/, "") || "0" : String(value);
}

/** Pretty JSON in a <pre>, for tool arguments, results and event details. */
export function json(value) {
  return h("pre", { class: "json" }, JSON.stringify(value, null, 2));
}

export function badge(text, kind = text) {
  return h("span", { class: `badge badge-${String(kind).replace(/[^a-z_-]/gi, "")}` }, text);
}

/** A key/value table (a definition list), for receipts, stats and reports. */
export function facts(entries) {
  return h("dl", { class: "facts" }, Object.entries(entries).map(([k, v]) => [
    h("dt", {}, k), h("dd", {}, v === null || v === undefined ? "—" : v),
  ]));
}

export function section(title, ...children) {
  return h("section", { class: "panel" }, h("h2", {}, title), ...children);
}

/** Internal links are real links (keyboard, middle-click, history) to hash routes. */
export function link(text, route, attrs = {}) {
  return h("a", { href: `#/${route}`, ...attrs }, text);
}

/**
 * Asks before anything destructive, in a modal <dialog> (focus trapped, Escape cancels).
 * `typed`: the exact text the person must type to confirm (for erasing a whole user or project).
 * Resolves true only on an explicit confirmation.
 */
export function confirmAction({ title, body, confirm = "Confirm", typed = null }) {
  return new Promise((resolve) => {
    const input = typed === null ? null
      : h("input", { type: "text", autocomplete: "off", spellcheck: "false", "aria-describedby": "confirm-typed" });
    const ok = h("button", { type: "submit", class: "danger", disabled: typed !== null }, confirm);
    const cancel = h("button", { type: "button", value: "cancel" }, "Cancel");
    const form = h("form", { method: "dialog" },
      h("h2", {}, title),
      h("p", {}, body),
      input ? field(h("span", { id: "confirm-typed" }, "Type ", h("code", {}, typed), " to confirm"), input) : null,
      h("div", { class: "actions" }, cancel, ok));
    const dialog = h("dialog", { class: "confirm", "aria-label": title }, form);
    let confirmed = false;
    if (input) input.addEventListener("input", () => { ok.disabled = input.value !== typed; });
    cancel.addEventListener("click", () => dialog.close());
    form.addEventListener("submit", (event) => {
      if (input && input.value !== typed) { event.preventDefault(); return; }
      confirmed = true;
    });
    dialog.addEventListener("close", () => { dialog.remove(); resolve(confirmed); });
    document.body.append(dialog);
    dialog.showModal();
    (input || cancel).focus();
  });
}

/** Runs `work` with `control` disabled meanwhile, so a double click does not send twice. */
export async function busy(control, work) {
  const wasDisabled = control.disabled;
  control.disabled = true;
  control.setAttribute("aria-busy", "true");
  try {
    return await work();
  } finally {
    control.disabled = wasDisabled;
    control.removeAttribute("aria-busy");
  }
}

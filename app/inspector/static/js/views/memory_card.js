// One memory as a card: what it says, its state and privacy, the successor that replaced it, and the
// owner's actions (pin, unpin, archive, restore, edit, forget). Used by the list, the detail and dreaming.

import { enc } from "../api.js";
import { badge, busy, button, confirmAction, field, h, link, num, select, when } from "../dom.js";

export const STATUSES = ["active", "pinned", "superseded", "archived", "expired", "forgotten"];
export const TYPES = ["identity", "preference", "fact", "decision", "constraint", "critical_rule", "project",
  "task", "deadline", "learning_goal", "mistake", "episodic", "temporary"];
export const PRIVACY = ["public", "private", "sensitive"];
const LIVE = new Set(["active", "pinned"]);

const short = (id) => String(id).slice(0, 8);

/** "React …" for a link to another memory when its text is known, else its short id. */
function nameOf(id, known) {
  const m = known && known.get(id);
  if (!m) return `memory ${short(id)}`;
  return m.content.length > 60 ? `${m.content.slice(0, 57)}…` : m.content;
}

/**
 * A card for `memory`. `known`: a Map id -> memory of what the page already holds (link texts).
 * `onChange(memory)`: called with the updated memory after an action, so the caller can re-render.
 */
export function memoryCard(memory, ctx, { known = null, onChange = null, detail = false } = {}) {
  const card = h("article", { class: `memory status-${memory.status}`, dataset: { memoryId: memory.id },
    "aria-label": `${memory.type} memory, ${memory.status}` });
  const render = (m) => card.replaceChildren(...cardBody(m, ctx, { known, detail, onChange: changed }));
  const changed = (m) => {
    Object.assign(memory, m);
    card.className = `memory status-${m.status}`;
    render(m);
    if (onChange) onChange(m);
  };
  render(memory);
  return card;
}

function cardBody(m, ctx, { known, detail, onChange }) {
  const superseded = m.status === "superseded";
  const text = superseded || m.status === "forgotten"
    ? h("del", { class: "content", title: `This memory is ${m.status}` }, m.content)
    : h("p", { class: "content" }, m.content);
  const links = [];
  if (m.superseded_by) {
    links.push(h("p", { class: "successor" }, "Superseded by ",
      link(nameOf(m.superseded_by, known), `memories/${enc(m.superseded_by)}`, { class: "successor-link", rel: "next" }),
      m.valid_to ? ` (true until ${when(m.valid_to)})` : ""));
  }
  if (m.supersedes) {
    links.push(h("p", { class: "predecessor" }, "Replaces ",
      link(nameOf(m.supersedes, known), `memories/${enc(m.supersedes)}`, { rel: "prev" })));
  }
  return [
    h("header", {},
      badge(m.type, "type"), badge(m.status), badge(m.privacy, `privacy-${m.privacy}`),
      m.subject ? h("span", { class: "subject" }, m.subject) : null,
      m.project_id ? h("span", { class: "muted" }, `project ${m.project_id}`) : null),
    text,
    ...links,
    h("p", { class: "meta muted" },
      `importance ${num(m.importance, 2)} · confidence ${num(m.confidence, 2)} · salience ${num(m.salience, 2)}`,
      ` · recalled ${m.access_count}× · ${m.source} · created ${when(m.created_at)}`,
      m.expires_at ? ` · expires ${when(m.expires_at)}` : "",
      m.tags && m.tags.length ? ` · tags ${m.tags.join(", ")}` : ""),
    actions(m, ctx, { detail, onChange }),
  ];
}

function actions(m, ctx, { detail, onChange }) {
  const act = (label, verb, attrs = {}) => button(label, (e) => busy(e.currentTarget, async () => {
    try {
      onChange(await ctx.api.post(`/v1/memories/${enc(m.id)}/${verb}`));
      ctx.notify(`Memory ${verb === "pin" ? "pinned" : verb === "unpin" ? "unpinned" : verb + "d"}.`);
    } catch (err) {
      ctx.fail(err);
    }
  }), attrs);
  const bar = h("div", { class: "actions", role: "group", "aria-label": "Memory actions" });
  if (!detail) bar.append(link("History", `memories/${enc(m.id)}`, { class: "button-like" }));
  if (LIVE.has(m.status) && m.status !== "pinned") bar.append(act("Pin", "pin"));
  if (m.status === "pinned") bar.append(act("Unpin", "unpin"));
  if (LIVE.has(m.status)) bar.append(act("Archive", "archive"));
  if (!LIVE.has(m.status) && m.status !== "forgotten") bar.append(act("Restore", "restore"));
  if (m.status !== "forgotten") {
    bar.append(button("Edit", () => bar.replaceWith(editForm(m, ctx, onChange))));
    bar.append(button("Forget", (e) => forget(e.currentTarget, m, ctx, onChange), { class: "danger" }));
  }
  return bar;
}

async function forget(control, m, ctx, onChange) {
  const ok = await confirmAction({
    title: "Forget this memory?",
    body: `“${m.content}” will no longer be recalled. The audit trail keeps that it existed (to remove the text itself, erase it from Data & privacy).`,
    confirm: "Forget",
  });
  if (!ok) return;
  await busy(control, async () => {
    try {
      await ctx.api.del(`/v1/memories/${enc(m.id)}`);
      onChange(await ctx.api.get(`/v1/memories/${enc(m.id)}`));
      ctx.notify("Memory forgotten.");
    } catch (err) {
      ctx.fail(err);
    }
  });
}

/** The fields a person may change; only those that changed are sent (PATCH). */
function editForm(m, ctx, onChange) {
  const content = h("textarea", { rows: 3, required: true, maxlength: 8000 }, m.content);
  const type = select({}, TYPES, m.type);
  const subject = h("input", { type: "text", value: m.subject || "", maxlength: 200 });
  const importance = h("input", { type: "number", min: 0, max: 1, step: 0.05, value: m.importance });
  const confidence = h("input", { type: "number", min: 0, max: 1, step: 0.05, value: m.confidence });
  const privacy = select({}, PRIVACY, m.privacy);
  const tags = h("input", { type: "text", value: (m.tags || []).join(", ") });
  const form = h("form", { class: "edit", "aria-label": "Edit memory" },
    field("Content", content),
    h("div", { class: "row" }, field("Type", type), field("Subject (slot)", subject, "empty: no slot"),
      field("Privacy", privacy)),
    h("div", { class: "row" }, field("Importance", importance), field("Confidence", confidence),
      field("Tags", tags, "comma separated")),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"),
      button("Cancel", () => onChange(m))));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const next = {
      content: content.value, type: type.value, subject: subject.value.trim() || null,
      importance: Number(importance.value), confidence: Number(confidence.value), privacy: privacy.value,
      tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean),
    };
    const changes = {};
    for (const [k, v] of Object.entries(next)) {
      if (JSON.stringify(v) !== JSON.stringify(k === "subject" ? m.subject || null : m[k])) changes[k] = v;
    }
    if (!Object.keys(changes).length) { onChange(m); return; }
    await busy(form.querySelector("button[type=submit]"), async () => {
      try {
        onChange(await ctx.api.patch(`/v1/memories/${enc(m.id)}`, changes));
        ctx.notify("Memory saved.");
      } catch (err) {
        ctx.fail(err);
      }
    });
  });
  queueMicrotask(() => content.focus());
  return form;
}

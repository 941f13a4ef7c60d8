// Memories: the user's memories filtered by status, type, project and text; one memory's history chain
// (every version of its slot) and its events.

import { enc } from "../api.js";
import { busy, button, field, fill, h, json, link, section, select, when } from "../dom.js";
import { memoryCard, PRIVACY, STATUSES, TYPES } from "./memory_card.js";

const FILTERS = "engram.inspector.memory-filters";

export function needUser(target, ctx) {
  if (ctx.userId) return false;
  target.append(h("p", { class: "empty" }, "Pick a user above, or type a user id, to see their memories."));
  return true;
}

function savedFilters() {
  try {
    return JSON.parse(sessionStorage.getItem(FILTERS) || "{}");
  } catch {
    return {};
  }
}

export async function memoriesView(target, ctx) {
  target.append(h("h1", {}, "Memories"));
  if (needUser(target, ctx)) return;
  const saved = savedFilters();
  const status = select({ name: "status" }, [["", "any status"], ...STATUSES], saved.status || "");
  const type = select({ name: "type" }, [["", "any type"], ...TYPES], saved.type || "");
  const q = h("input", { type: "search", name: "q", value: saved.q || "", maxlength: 2000 });
  const form = h("form", { class: "filters", role: "search", "aria-label": "Filter memories" },
    field("Status", status), field("Type", type), field("Text", q, "words in the content"),
    h("button", { type: "submit" }, "Filter"));
  const scopeNote = h("p", { class: "muted" }, ctx.projectId
    ? `Project ${ctx.projectId} only.` : "All projects and global memories.");
  const list = h("div", { class: "memories", "aria-live": "polite" });
  const more = h("div", { class: "more" });
  target.append(addForm(ctx, () => load()), form, scopeNote, list, more);

  const known = new Map();
  const load = async (cursor = null) => {
    const params = { user_id: ctx.userId, project_id: ctx.projectId, status: status.value, type: type.value,
      q: q.value.trim(), limit: 50, cursor };
    const page = await ctx.api.get("/v1/memories", params);
    if (!cursor) list.replaceChildren();
    for (const m of page.items) known.set(m.id, m);
    for (const m of page.items) list.append(memoryCard(m, ctx, { known }));
    if (!list.children.length) list.append(h("p", { class: "empty" }, "No memories match."));
    fill(more, page.next_cursor
      ? button("Load more", () => load(page.next_cursor).catch(ctx.fail)) : null);
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(FILTERS, JSON.stringify({ status: status.value, type: type.value, q: q.value }));
    load().catch(ctx.fail);
  });
  await load();
}

/** Remember something by hand (POST /v1/memories): the write path decides as for any client. */
function addForm(ctx, reload) {
  const content = h("textarea", { name: "content", rows: 2, required: true, maxlength: 8000 });
  const type = select({ name: "type" }, TYPES, "fact");
  const subject = h("input", { type: "text", name: "subject", maxlength: 200 });
  const privacy = select({ name: "privacy" }, PRIVACY, "public");
  const pinned = h("input", { type: "checkbox", name: "pinned" });
  const save = h("button", { type: "submit" }, "Remember");
  const form = h("form", { class: "edit", "aria-label": "Add a memory" },
    field("Content", content),
    h("div", { class: "row" }, field("Type", type), field("Subject (slot)", subject, "same subject and type: the newer replaces the older"),
      field("Privacy", privacy), h("label", { class: "check" }, pinned, " pinned")),
    h("div", { class: "actions" }, save));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(save, async () => {
      const body = { user_id: ctx.userId, content: content.value, type: type.value, privacy: privacy.value,
        pinned: pinned.checked };
      if (subject.value.trim()) body.subject = subject.value.trim();
      if (ctx.projectId) body.project_id = ctx.projectId;
      try {
        const r = await ctx.api.post("/v1/memories", body);
        const replaced = r.superseded.length ? `; it supersedes ${r.superseded.length} older memory` : "";
        const proposed = r.proposals.length ? `; ${r.proposals.length} change(s) await review in Dreaming` : "";
        ctx.notify(`Memory ${r.action}${replaced}${proposed}${r.redacted ? " (a secret was redacted)" : ""}.`);
        content.value = "";
        await reload();
        await ctx.refreshPickers();
      } catch (err) {
        ctx.fail(err);
      }
    });
  });
  return h("details", { class: "panel add" }, h("summary", {}, "Add a memory"), form);
}

export async function memoryView(target, ctx, memoryId) {
  const [memory, history] = await Promise.all([
    ctx.api.get(`/v1/memories/${enc(memoryId)}`),
    ctx.api.get(`/v1/memories/${enc(memoryId)}/history`),
  ]);
  const known = new Map(history.versions.map((v) => [v.id, v]));
  known.set(memory.id, memory);
  target.append(
    h("p", {}, link("← All memories", "memories")),
    h("h1", {}, "Memory"),
    memoryCard(memory, ctx, { known, detail: true, onChange: () => ctx.reload() }),
    section("History chain", h("p", { class: "muted" },
      "Every version of this memory's slot, newest first; the one shown above is marked."),
    h("ol", { class: "chain" }, history.versions.map((v) => h("li", { class: v.id === memory.id ? "this" : "" },
      h("span", { class: `badge badge-${v.status}` }, v.status), " ",
      v.status === "superseded" ? h("del", {}, v.content) : h("span", {}, v.content), " ",
      v.id === memory.id ? h("strong", {}, "(this one)") : link("open", `memories/${enc(v.id)}`),
      h("span", { class: "muted" }, ` · valid ${when(v.valid_from)} → ${v.valid_to ? when(v.valid_to) : "now"}`))))),
    section("Events", eventTable(history.events, known)),
  );
}

const clip = (text, n = 48) => (text && text.length > n ? `${text.slice(0, n - 1)}…` : text);

/** Events as a table: when, what, who, why, and the details the write path recorded. */
export function eventTable(events, known = new Map()) {
  if (!events.length) return h("p", { class: "empty" }, "No events.");
  return h("div", { class: "table-wrap" }, h("table", { class: "events" },
    h("thead", {}, h("tr", {}, ["When", "Event", "Memory", "Actor", "Reason", "Details"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, events.map((e) => h("tr", {},
      h("td", {}, when(e.created_at)),
      h("td", {}, h("span", { class: `badge badge-${e.kind}` }, e.kind)),
      h("td", {}, e.memory_id ? link(clip(known.get(e.memory_id)?.content) || String(e.memory_id).slice(0, 8),
        `memories/${enc(e.memory_id)}`) : "—"),
      h("td", {}, e.actor),
      h("td", {}, e.reason || ""),
      h("td", {}, Object.keys(e.details || {}).length ? h("details", {}, h("summary", {}, "details"), json(e.details)) : ""))))));
}

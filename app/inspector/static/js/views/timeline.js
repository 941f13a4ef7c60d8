// Timeline: what happened to the user's memories, newest first (GET /v1/timeline).

import { button, fill, h } from "../dom.js";
import { eventTable, needUser } from "./memories.js";

export async function timelineView(target, ctx) {
  target.append(h("h1", {}, "Timeline"));
  if (needUser(target, ctx)) return;
  target.append(h("p", { class: "muted" }, ctx.projectId
    ? `Events of project ${ctx.projectId}, newest first.` : "Events of every project and the global memories, newest first."));
  const pages = h("div", { class: "timeline" });
  const more = h("div", { class: "more" });
  target.append(pages, more);
  // Events name memories by id; the user's memories (first page) give the links their text.
  const listed = await ctx.api.get("/v1/memories", { user_id: ctx.userId, limit: 500 });
  const known = new Map(listed.items.map((m) => [m.id, m]));
  const load = async (cursor = null) => {
    const page = await ctx.api.get("/v1/timeline", { user_id: ctx.userId, project_id: ctx.projectId, limit: 100, cursor });
    pages.append(eventTable(page.items, known));
    fill(more, page.next_cursor ? button("Older events", () => load(page.next_cursor).catch(ctx.fail)) : null);
  };
  await load();
}

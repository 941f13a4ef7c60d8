// Dreaming: propose consolidations, read each proposal's rationale and targets, approve or reject,
// apply what was approved and read the report. Nothing changes without an approval.

import { enc } from "../api.js";
import { badge, busy, button, facts, fill, h, json, link, section, select, when } from "../dom.js";
import { needUser } from "./memories.js";

const PROPOSAL_STATUSES = ["proposed", "approved", "rejected", "applied", "stale"];

export async function dreamView(target, ctx) {
  target.append(h("h1", {}, "Dreaming"));
  if (needUser(target, ctx)) return;
  const status = select({ "aria-label": "Proposal status" }, [["", "every status"], ...PROPOSAL_STATUSES], "");
  const list = h("div", { class: "proposals", "aria-live": "polite" });
  const report = h("div", { class: "report", "aria-live": "polite" });
  const scope = () => (ctx.projectId ? { project_id: ctx.projectId } : {});

  const load = async () => {
    const page = await ctx.api.get("/v1/dream/proposals", { user_id: ctx.userId, status: status.value, limit: 100, ...scope() });
    const ids = [...new Set(page.items.flatMap((p) => p.target_ids))];
    const targets = new Map(await Promise.all(ids.map(async (id) => {
      try {
        return [id, await ctx.api.get(`/v1/memories/${enc(id)}`)];
      } catch {
        return [id, null]; // erased since: the proposal still names it
      }
    })));
    fill(list, page.items.length
      ? page.items.map((p) => proposalCard(p, targets, ctx, load))
      : h("p", { class: "empty" }, "No proposals. Propose to let the dreamer look for duplicates and decayed memories."));
  };
  const propose = button("Propose consolidations", (e) => busy(e.currentTarget, async () => {
    try {
      const result = await ctx.api.post("/v1/dream", { user_id: ctx.userId, ...scope() });
      ctx.notify(`The ${result.mode} dreamer made ${result.created} new proposal(s)` +
        (result.dropped ? `; ${result.dropped} invalid one(s) dropped.` : "."));
      await load();
    } catch (err) {
      ctx.fail(err);
    }
  }));
  const apply = button("Apply approved proposals", (e) => busy(e.currentTarget, async () => {
    try {
      const result = await ctx.api.post("/v1/dream/apply", { user_id: ctx.userId });
      fill(report, applyReport(result));
      await load();
    } catch (err) {
      ctx.fail(err);
    }
  }), { class: "primary" });
  status.addEventListener("change", () => load().catch(ctx.fail));
  target.append(
    h("div", { class: "toolbar" }, propose, apply, h("label", { class: "picker" }, "Show ", status)),
    report, list);
  await load();
}

function targetItem(id, memory) {
  if (!memory) return h("li", { class: "muted" }, `memory ${String(id).slice(0, 8)} (no longer stored)`);
  return h("li", {}, badge(memory.status), " ", link(memory.content, `memories/${enc(id)}`),
    h("span", { class: "muted" }, ` · ${memory.type}${memory.subject ? ` · ${memory.subject}` : ""}`));
}

function proposalCard(p, targets, ctx, reload) {
  const decide = (verb) => button(verb === "approve" ? "Approve" : "Reject", (e) => busy(e.currentTarget, async () => {
    try {
      await ctx.api.post(`/v1/dream/proposals/${enc(p.id)}/${verb}`);
      ctx.notify(`Proposal ${verb === "approve" ? "approved" : "rejected"}.`);
      await reload();
    } catch (err) {
      ctx.fail(err);
    }
  }), { class: verb === "approve" ? "primary" : "" });
  const { fingerprint, ...shown } = p.payload || {};
  return h("article", { class: `proposal status-${p.status}`, dataset: { proposalId: p.id },
    "aria-label": `${p.kind} proposal, ${p.status}` },
  h("header", {}, badge(p.kind, "type"), badge(p.status), h("span", { class: "muted" }, ` ${p.model || ""} · ${when(p.created_at)}`)),
  h("p", { class: "rationale" }, p.rationale || "(no rationale given)"),
  p.kind === "merge" && shown.content ? h("p", {}, "Merged text: ", h("q", {}, shown.content)) : null,
  h("h3", {}, `Targets (${p.target_ids.length})`),
  h("ul", { class: "targets" }, p.target_ids.map((id) => targetItem(id, targets.get(id)))),
  Object.keys(shown).length ? h("details", {}, h("summary", {}, "payload"), json(shown)) : null,
  fingerprint ? h("p", { class: "muted" }, "Applying re-checks that every target is unchanged since this proposal (else it is stale).") : null,
  p.status === "proposed" ? h("div", { class: "actions" }, decide("approve"), decide("reject")) : null);
}

function applyReport(r) {
  return section("Apply report",
    facts({ applied: r.applied, merged: r.merged, forgotten: r.forgotten, resalienced: r.resalienced,
      superseded: r.superseded, stale: r.stale, skipped: r.skipped }),
    r.results.length ? h("ul", {}, r.results.map((o) => h("li", {}, badge(o.status), ` ${o.kind} `,
      o.memory_id ? link("new memory", `memories/${enc(o.memory_id)}`) : "", o.reason ? ` — ${o.reason}` : ""))) : null);
}

// Usage: tokens per model and kind over time (GET /v1/usage/series, drawn by chart.js), the window's
// totals (GET /v1/usage) and the memory store's statistics (GET /v1/stats).

import { facts, fill, h, section, select } from "../dom.js";
import { legend, stackedBars } from "../chart.js";

const MINUTE = 60_000;
const WINDOWS = {
  hour: { label: "last hour, per minute", bucket: "minute", step: MINUTE, count: 60 },
  day: { label: "last 24 hours, per hour", bucket: "hour", step: 60 * MINUTE, count: 24 },
  month: { label: "last 30 days, per day", bucket: "day", step: 24 * 60 * MINUTE, count: 30 },
};

/** Bucket starts aligned to the bucket (UTC), the last one holding now. */
function windowOf(key, now = Date.now()) {
  const w = WINDOWS[key];
  const end = Math.floor(now / w.step) * w.step + w.step;
  const starts = Array.from({ length: w.count }, (_, i) => end - (w.count - i) * w.step);
  return { ...w, since: new Date(starts[0]).toISOString(), until: new Date(end).toISOString(), starts };
}

function bucketLabel(ms, bucket) {
  const iso = new Date(ms).toISOString();
  return bucket === "day" ? iso.slice(5, 10) : iso.slice(11, 16);
}

function tokenTable(title, groups) {
  const rows = Object.entries(groups);
  return section(title, rows.length ? h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, ["", "calls", "prompt", "completion", "total"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map(([name, r]) => h("tr", {}, h("th", { scope: "row" }, name),
      h("td", {}, r.calls), h("td", {}, r.prompt_tokens), h("td", {}, r.completion_tokens), h("td", {}, r.total_tokens))))))
    : h("p", { class: "empty" }, "No model calls in this window."));
}

export async function usageView(target, ctx) {
  target.append(h("h1", {}, "Usage"));
  const period = select({ "aria-label": "Window" }, Object.entries(WINDOWS).map(([k, w]) => [k, w.label]), "day");
  const scope = select({ "aria-label": "Whose usage" },
    [["tenant", "whole tenant"], ...(ctx.userId ? [["user", `user ${ctx.userId}`]] : [])], ctx.userId ? "user" : "tenant");
  const body = h("div", { "aria-live": "polite" });
  target.append(h("div", { class: "toolbar" }, h("label", { class: "picker" }, "Window ", period),
    h("label", { class: "picker" }, "Scope ", scope)), body);
  const load = async () => {
    const w = windowOf(period.value);
    const userId = scope.value === "user" ? ctx.userId : "";
    const [series, totals, stats] = await Promise.all([
      ctx.api.get("/v1/usage/series", { since: w.since, until: w.until, bucket: w.bucket, user_id: userId }),
      ctx.api.get("/v1/usage", { since: w.since, until: w.until, user_id: userId }),
      ctx.api.get("/v1/stats", { user_id: ctx.userId }),
    ]);
    fill(body, chartSection(series, w), tokenTable("By model", totals.by_model),
      tokenTable("By kind", totals.by_kind), statsSection(stats, ctx));
  };
  period.addEventListener("change", () => load().catch(ctx.fail));
  scope.addEventListener("change", () => load().catch(ctx.fail));
  await load();
}

function chartSection(series, w) {
  const names = [...new Set(series.items.map((r) => `${r.model} · ${r.kind}`))].sort();
  const index = new Map(w.starts.map((ms, i) => [ms, i]));
  const lines = names.map((name) => ({ name, values: w.starts.map(() => 0) }));
  for (const r of series.items) {
    const i = index.get(Date.parse(r.start));
    if (i !== undefined) lines[names.indexOf(`${r.model} · ${r.kind}`)].values[i] += r.total_tokens;
  }
  const labels = w.starts.map((ms) => bucketLabel(ms, w.bucket));
  const title = `Tokens per model and kind, ${w.label} (UTC)`;
  return section(title, names.length
    ? h("figure", { class: "chart-figure" }, stackedBars(labels, lines, { title }), h("figcaption", {}, legend(lines)))
    : h("p", { class: "empty" }, "No model calls in this window."));
}

function statsSection(stats, ctx) {
  return section(ctx.userId ? `Memories of ${ctx.userId}` : "Memories of the tenant",
    facts({ total: stats.total, "embed model": stats.embed_model, "mismatched (awaiting re-embed)": stats.mismatched }),
    h("div", { class: "row" },
      h("div", {}, h("h3", {}, "By status"), facts(stats.by_status)),
      h("div", {}, h("h3", {}, "By type"), facts(stats.by_type))));
}

// Recall playground: a query and a budget give the context exactly as returned, the tokens it used
// against the budget, and every candidate, included or skipped, with its score components and reason.

import { enc } from "../api.js";
import { busy, facts, field, h, link, num, section } from "../dom.js";
import { needUser } from "./memories.js";

export const SKIP_REASONS = {
  budget: "did not fit in the tokens left",
  below_floor: "relevance under the minimum: abstaining beats noise",
  slot_veto: "a newer memory holds the same slot (subject and type)",
  duplicate: "the same content as a memory already included",
};

/** Components as "name value" pairs, in the scorer's order (relevance first, then lifecycle terms). */
export function components(values) {
  const entries = Object.entries(values || {});
  return h("ul", { class: "components", "aria-label": "score components" },
    entries.map(([name, value]) => h("li", {}, h("span", { class: "name" }, name), " ", h("span", { class: "value" }, num(value)))));
}

export async function recallView(target, ctx) {
  target.append(h("h1", {}, "Recall playground"));
  if (needUser(target, ctx)) return;
  const query = h("input", { type: "text", name: "query", required: true, maxlength: 2000, size: 40 });
  const budget = h("input", { type: "number", name: "token_budget", min: 1, max: 32768, value: 1024, required: true });
  const floor = h("input", { type: "number", name: "min_relevance", min: 0, max: 1, step: 0.01, placeholder: "default" });
  const sensitive = h("input", { type: "checkbox", name: "include_sensitive" });
  const run = h("button", { type: "submit" }, "Recall");
  const form = h("form", { class: "filters", "aria-label": "Recall" },
    field("Query", query), field("Token budget", budget), field("Minimum relevance", floor, "0–1, empty: the embedder's"),
    h("label", { class: "check" }, sensitive, " include sensitive"), run);
  const out = h("div", { class: "recall-result", "aria-live": "polite" });
  target.append(
    h("p", { class: "muted" }, "A real recall, scoped to the picked user and project (plus global memories): what it includes is reinforced like any recall."),
    form, out);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(run, async () => {
      const body = { user_id: ctx.userId, query: query.value, token_budget: Number(budget.value), explain: true,
        include_sensitive: sensitive.checked };
      if (ctx.projectId) body.project_id = ctx.projectId;
      if (floor.value !== "") body.min_relevance = Number(floor.value);
      try {
        const result = await ctx.api.post("/v1/recall", body);
        out.replaceChildren(...(await renderRecall(result, ctx)));
      } catch (err) {
        ctx.fail(err);
      }
    });
  });
}

/** The recall's result; also used by the chat view for a turn's trace. */
export async function renderRecall(result, ctx) {
  const trace = result.trace;
  const used = h("meter", { min: 0, max: result.token_budget, value: result.tokens_used, "aria-label": "tokens used" });
  const summary = facts({
    "tokens used": h("span", {}, h("strong", { class: "tokens-used" }, `${result.tokens_used} of ${result.token_budget}`), " ", used),
    candidates: trace ? trace.candidates : "—",
    "minimum relevance": trace ? num(trace.min_relevance) : "—",
    plan: trace ? trace.plan : "—",
    "latency (ms)": trace ? Object.entries(trace.latency_ms).map(([k, v]) => `${k} ${num(v, 1)}`).join(" · ") : "—",
  });
  const context = result.context
    ? h("pre", { class: "context", "aria-label": "context as returned" }, result.context)
    : h("p", { class: "empty" }, "Empty: no memory passed the minimum relevance or fitted the budget.");
  return [section("Budget", summary), section("Context, exactly as returned", context),
    section("Candidates", await candidateTable(result, ctx))];
}

async function candidateTable(result, ctx) {
  const skipped = result.trace ? result.trace.skipped : [];
  // The trace names skipped memories by id; their text is fetched (a handful of reads, in parallel).
  const texts = new Map(await Promise.all(skipped.map(async (s) => {
    try {
      return [s.id, (await ctx.api.get(`/v1/memories/${enc(s.id)}`)).content];
    } catch {
      return [s.id, null];
    }
  })));
  const rows = [
    ...result.memories.map((m, i) => ({ id: m.memory.id, included: true, rank: i + 1, text: m.memory.content,
      score: m.score, relevance: m.relevance, tokens: m.tokens, components: m.components })),
    ...skipped.map((s) => ({ id: s.id, included: false, reason: s.reason, text: texts.get(s.id),
      score: s.score, relevance: s.relevance, components: s.components })),
  ];
  if (!rows.length) return h("p", { class: "empty" }, "No candidates in this scope.");
  return h("div", { class: "table-wrap" }, h("table", { class: "candidates" },
    h("thead", {}, h("tr", {}, ["Decision", "Memory", "Score", "Relevance", "Tokens", "Components"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", { class: r.included ? "included" : "skipped", dataset: { memoryId: r.id } },
      h("td", {}, r.included
        ? h("span", { class: "decision" }, h("span", { class: "badge badge-included" }, "included"), ` #${r.rank}`)
        : h("span", { class: "decision" }, h("span", { class: "badge badge-skipped" }, "skipped"), " ",
          h("span", { class: "reason" }, r.reason), h("br"), h("small", { class: "muted" }, SKIP_REASONS[r.reason] || ""))),
      h("td", {}, link(r.text ?? `memory ${String(r.id).slice(0, 8)}`, `memories/${enc(r.id)}`)),
      h("td", {}, num(r.score)),
      h("td", {}, num(r.relevance)),
      h("td", {}, r.tokens ?? "—"),
      h("td", {}, components(r.components)))))));
}

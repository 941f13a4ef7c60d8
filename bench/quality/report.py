"""Aggregates the per-question rows into Markdown tables and PNG context-efficiency curves."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.common import pyplot
from bench.quality.metrics import KS, mean, percentile

SYSTEM_ORDER = ("no_memory", "full_history", "dense", "bm25", "engram")
DRAGON = {"r@5": 56.7, "r@10": 66.2, "r@25": 76.7, "r@50": 82.7}
CATEGORY_BUDGETS = (256, 1024)
Row = dict[str, Any]


def pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-").lower()


class Aggregate:
    """Figures over a set of rows (one dataset/embedder/mode/system), per budget index."""

    def __init__(self, rows: Sequence[Row], budgets: Sequence[int]) -> None:
        self.rows = rows
        self.budgets = budgets

    def _per_budget(self, field: str, rows: Sequence[Row] | None = None) -> list[float | None]:
        rows = self.rows if rows is None else rows
        return [mean(r[field][i] for r in rows) for i in range(len(self.budgets))]

    def main(self) -> list[Row]:
        return [r for r in self.rows if r["group"] == "main"]

    def recall(self, rows: Sequence[Row] | None = None) -> list[float | None]:
        return self._per_budget("recall", self.main() if rows is None else rows)

    def recall_whole(self) -> list[float | None]:
        """Evidence recall counting only turns shown in full (runs before this field: the same)."""
        key = "recall_whole" if all("recall_whole" in r for r in self.main()) else "recall"
        return self._per_budget(key, self.main())

    def stale(self) -> list[float | None]:
        return self._per_budget("stale", self.main())

    def update_ok(self) -> list[float | None]:
        return self._per_budget("update_ok", self.main())

    def both(self) -> list[float | None]:
        return self._per_budget("both", self.main())

    def abstained(self, group: str) -> list[float | None]:
        return self._per_budget("abstained", [r for r in self.rows if r["group"] == group])

    def tokens(self) -> list[float | None]:
        return self._per_budget("tokens", self.main())

    def latency(self, q: float = 50) -> float | None:
        return percentile([x for r in self.rows for x in r["latency_ms"]], q)

    def ranks(self) -> dict[str, float | None]:
        rows = [r for r in self.main() if r["rank"]]
        return {f"r@{k}": mean(r["rank"][f"r@{k}"] for r in rows) for k in KS}

    def count(self, field: str) -> int:
        return sum(1 for r in self.main() if r[field][0] is not None)


def _select(rows: Sequence[Row], **match: Any) -> list[Row]:
    return [r for r in rows if all(r[k] == v for k, v in match.items())]


def configs(rows: Sequence[Row], dataset: str) -> list[tuple[str, str]]:
    """(embedder, mode) pairs of the ranked systems of a dataset, in first-seen order."""
    seen: dict[tuple[str, str], None] = {}
    for r in rows:
        if r["dataset"] == dataset and r["embedder"] != "any":
            seen[(r["embedder"], r["mode"])] = None
    return list(seen) or [("any", "any")]


def system_rows(rows: Sequence[Row], dataset: str, embedder: str, mode: str) -> dict[str, list[Row]]:
    """Rows per system for one table: the ranked systems of (embedder, mode) plus the independent ones."""
    out: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        if r["dataset"] != dataset:
            continue
        if (r["embedder"], r["mode"]) in ((embedder, mode), ("any", "any")):
            out[r["system"]].append(r)
    return {s: out[s] for s in SYSTEM_ORDER if s in out}


def budget_table(
    per_system: dict[str, list[Row]],
    budgets: Sequence[int],
    figure: Callable[[Aggregate], list[float | None]],
) -> str:
    header = ["system", *[str(b) for b in budgets]]
    body = [[s, *[pct(v) for v in figure(Aggregate(r, budgets))]] for s, r in per_system.items()]
    return table(header, body)


def dataset_section(rows: Sequence[Row], dataset: str, info: dict[str, Any], budgets: Sequence[int]) -> str:
    out = [f"## {dataset}\n"]
    groups = ", ".join(f"{k} {v}" for k, v in info.get("questions", {}).items())
    units = info.get("units", {})
    out.append(
        f"{info.get('conversations')} conversations, {info.get('turns')} turns "
        f"({units.get('raw')} raw units, {units.get('extracted')} extracted facts); questions: {groups}.\n"
    )
    out += [f"- {note}" for note in info.get("notes", [])]
    out.append("")
    for embedder, mode in configs(rows, dataset):
        per = system_rows(rows, dataset, embedder, mode)
        if not per:
            continue
        any_rows = next(iter(per.values()))
        agg = Aggregate(any_rows, budgets)
        out.append(f"### {dataset}: embedder {embedder}, mode {mode}\n")
        n_main = sum(1 for r in any_rows if r["group"] == "main" and r["recall"][0] is not None)
        out.append(f"Evidence recall@budget, % (main questions with evidence, n={n_main})\n")
        out.append(budget_table(per, budgets, lambda a: a.recall()))
        if any(r.get("recall_whole") != r["recall"] for rows_ in per.values() for r in rows_):
            out.append(
                "Evidence recall counting only turns shown in full, % (a turn is not credited by a "
                "passage of it, nor by some of its chunks; extracted facts: by some of its facts)\n"
            )
            out.append(budget_table(per, budgets, lambda a: a.recall_whole()))
        if agg.count("stale"):
            out.append(
                f"Staleness, % of questions with a superseded or out-of-scope turn (n={agg.count('stale')})\n"
            )
            out.append(budget_table(per, budgets, lambda a: a.stale()))
        if agg.count("update_ok"):
            out.append(
                f"Update order, % (current present, superseded absent or below; n={agg.count('update_ok')})\n"
            )
            out.append(budget_table(per, budgets, lambda a: a.update_ok()))
        if agg.count("both"):
            out.append(f"Both contradicting statements present, % (n={agg.count('both')})\n")
            out.append(budget_table(per, budgets, lambda a: a.both()))
        out.append("Tokens used (mean over main questions)\n")
        out.append(
            table(
                ["system", *map(str, budgets)],
                [
                    [s, *["-" if v is None else f"{v:.0f}" for v in Aggregate(r, budgets).tokens()]]
                    for s, r in per.items()
                ],
            )
        )
        ranked = {s: Aggregate(r, budgets).ranks() for s, r in per.items() if any(x["rank"] for x in r)}
        if ranked:
            out.append("recall@k over distinct turns, independent of tokens, %\n")
            body = [[s, *[pct(v[f"r@{k}"]) for k in KS]] for s, v in ranked.items()]
            if dataset.startswith("locomo"):
                body.append(
                    ["DRAGON (LoCoMo paper, Table 3, all 10 conversations)", *[DRAGON[f"r@{k}"] for k in KS]]
                )
            out.append(table(["system", *[f"@{k}" for k in KS]], body))
        out.append("Latency per recall, ms (p50 / p95)\n")
        out.append(
            table(
                ["system", "p50", "p95"],
                [
                    [
                        s,
                        f"{Aggregate(r, budgets).latency(50) or 0:.2f}",
                        f"{Aggregate(r, budgets).latency(95) or 0:.2f}",
                    ]
                    for s, r in per.items()
                    if s != "no_memory"
                ],
            )
        )
        out.append(category_tables(per, budgets))
        for group in ("adversarial", "abstention", "no_evidence"):
            grouped = {s: [x for x in r if x["group"] == group] for s, r in per.items()}
            if not any(grouped.values()):
                continue
            n = len(next(iter(grouped.values())))
            if group == "adversarial":
                out.append(f"Adversarial questions (reported separately; n={n}): evidence recall, %\n")
                out.append(budget_table(grouped, budgets, lambda a: a._per_budget("recall", a.rows)))
            out.append(f"{group} questions (n={n}): share answered with an empty context, %\n")
            out.append(budget_table(grouped, budgets, lambda a, g=group: a.abstained(g)))
    return "\n".join(out)


def headline(rows: Sequence[Row], budgets: Sequence[int]) -> str:
    """Engram against the best baseline at every budget, per dataset/embedder/mode (main questions)."""
    body = []
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    for dataset in datasets:
        for embedder, mode in configs(rows, dataset):
            per = system_rows(rows, dataset, embedder, mode)
            if "engram" not in per:
                continue
            recall = {s: Aggregate(r, budgets).recall() for s, r in per.items()}
            stale = {s: Aggregate(r, budgets).stale() for s, r in per.items()}
            cells = []
            wins = []
            for i, budget in enumerate(budgets):
                others = {s: v[i] for s, v in recall.items() if s != "engram" and v[i] is not None}
                best = max(others, key=lambda s: others[s]) if others else None
                mine = recall["engram"][i]
                cell = f"{pct(mine)} / {pct(others.get(best)) if best else '-'} {best or ''}".strip()
                if stale["engram"][i] is not None:
                    cell += f" (st {pct(stale['engram'][i], 0)})"
                cells.append(cell)
                if mine is not None and best is not None and mine >= others[best] - 1e-9:
                    wins.append(str(budget))
            body.append([dataset, embedder, mode, *cells, ", ".join(wins) or "none"])
    header = ["dataset", "embedder", "mode", *map(str, budgets), "Engram >= best baseline at"]
    return (
        "## Headline: Engram evidence recall / best baseline (which), %; (st = Engram staleness)\n\n"
        + table(header, body)
    )


def category_tables(per: dict[str, list[Row]], budgets: Sequence[int]) -> str:
    categories = sorted({r["category"] for rows in per.values() for r in rows if r["group"] == "main"})
    if len(categories) < 2:
        return ""
    out = []
    for budget in CATEGORY_BUDGETS:
        if budget not in budgets:
            continue
        i = list(budgets).index(budget)
        header = ["category", "n", *per]
        body = []
        for cat in categories:
            cells: list[str] = []
            n = 0
            for rows in per.values():
                picked = [r for r in rows if r["group"] == "main" and r["category"] == cat]
                n = max(n, sum(1 for r in picked if r["recall"][i] is not None))
                recall = mean(r["recall"][i] for r in picked)
                stale = mean(r["stale"][i] for r in picked)
                cell = pct(recall)
                if stale is not None:
                    cell += f" / st {pct(stale, 0)}"
                cells.append(cell)
            body.append([cat, n, *cells])
        out.append(f"Per category at budget {budget}: recall % (/ staleness % where labelled)\n")
        out.append(table(header, body))
    return "\n".join(out)


def plot(rows: Sequence[Row], dataset: str, budgets: Sequence[int], directory: Path) -> list[Path]:
    plt = pyplot()

    written = []
    for embedder, mode in configs(rows, dataset):
        per = system_rows(rows, dataset, embedder, mode)
        if not per:
            continue
        aggs = {s: Aggregate(r, budgets) for s, r in per.items()}
        has_stale = any(a.count("stale") for a in aggs.values())
        fig, axes = plt.subplots(1, 2 if has_stale else 1, figsize=(11 if has_stale else 6, 4), squeeze=False)
        for s, a in aggs.items():
            recall = [None if v is None else 100 * v for v in a.recall()]
            axes[0][0].plot(budgets, recall, marker="o", label=s)
            if has_stale:
                stale = [None if v is None else 100 * v for v in a.stale()]
                axes[0][1].plot(budgets, stale, marker="o", label=s)
        titles = ["evidence recall %", "staleness %"]
        for ax, title in zip(axes[0], titles, strict=False):
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(budgets), [str(b) for b in budgets])
            ax.set_xlabel("token budget")
            ax.set_title(f"{dataset} ({embedder}, {mode}): {title}", fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = directory / f"curves-{slug(dataset)}-{embedder}-{mode}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def seeds_section(seed_rows: Sequence[Row], published: dict[str, Any], capabilities: dict[str, Any]) -> str:
    out: list[str] = []
    personas = [r for r in seed_rows if r["suite"] == "qma_personas"]
    if personas:
        budgets = sorted({r["budget"] for r in personas})
        out.append("## qma_personas (qwen-memory-agent): recall / staleness per budget, %\n")
        groups: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
        for r in personas:
            groups[(r["embedder"], r["system"], r["variant"])].append(r)
        body = []
        for (embedder, system, variant), rows in groups.items():
            cells = []
            for b in budgets:
                picked = [r for r in rows if r["budget"] == b]
                cells.append(
                    f"{pct(mean(r['recall'] for r in picked), 0)} / {pct(mean(r['stale'] for r in picked), 0)}"
                )
            body.append([f"{system} ({variant}, {embedder})", *cells])
        theirs = (published.get("qma_personas") or {}).get("results") or {}
        for name in ("B0", "B1", "B2", "B3"):
            if name in theirs:
                cells = [
                    f"{pct(theirs[name][str(b)][0], 0)} / {pct(theirs[name][str(b)][1], 0)}"
                    if str(b) in theirs[name]
                    else "-"
                    for b in budgets
                ]
                body.append([f"published {name}", *cells])
        out.append(table(["system", *map(str, budgets)], body))
        if capabilities:
            out.append(
                "Capability checks (persona ryan, subjects handed in): "
                + ", ".join(f"{k} {v}" for k, v in capabilities.items())
                + "\n"
            )
    diag = [r for r in seed_rows if r["suite"] == "memopilot_diagnostic"]
    if diag:
        out.append("## memopilot_diagnostic (MemoPilot IQ), memory layer, budget 2500\n")
        groups2: dict[tuple[str, str], list[Row]] = defaultdict(list)
        for r in diag:
            groups2[(r["embedder"], r["system"])].append(r)
        body = []
        for (embedder, system), rows in groups2.items():
            scored = [r for r in rows if r["recall"] is not None]
            hits = sum(bool(r["recall"]) for r in scored)
            stale = sum(bool(r["stale"]) for r in rows)
            ctx = sum(r["tokens"] for r in rows)
            src = sum(r["source_tokens"] for r in rows)
            ctx4 = sum(r["context_chars4"] for r in rows)
            src4 = sum(r["source_chars4"] for r in rows)
            body.append(
                [
                    f"{system} ({embedder})",
                    f"{hits}/{len(scored)}",
                    f"{stale}/{len(rows)}",
                    f"{ctx} / {src}",
                    f"{pct(1 - ctx / src if src else None, 0)}",
                    f"{ctx4} / {src4}",
                    f"{pct(1 - ctx4 / src4 if src4 else None, 0)}",
                ]
            )
        summary = (published.get("memopilot_diagnostic") or {}).get("summary") or {}
        if summary:
            body.append(
                [
                    "published memory layer",
                    f"{summary.get('memory_recall_hits')}/{summary.get('memory_recall_total')}",
                    f"{summary.get('outdated_memory_errors')}/{summary.get('num_scenarios')}",
                    "-",
                    "-",
                    f"{summary.get('memory_context_tokens')} / {summary.get('full_history_tokens')}",
                    f"{summary.get('token_savings_percent')}",
                ]
            )
        out.append(
            table(
                [
                    "system",
                    "context recall",
                    "stale errors",
                    "context / raw tokens (tiktoken, whole lines)",
                    "savings %",
                    "memory text / raw (len//4, as they counted)",
                    "savings % (len//4)",
                ],
                body,
            )
        )
    return "\n".join(out)

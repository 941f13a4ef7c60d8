"""The predecessors' own cases (../shared/seed-suites/), at the memory layer, graded by their own rules.

qma_personas.json (qwen-memory-agent): per persona, the history (sessions, then distractors) written in
order, then each query recalled at the file's budgets; recall = the expected value is a casefold
substring of the context, staleness = a retired value is. Scored twice: `subjects` writes every item as
a preference with the subject handed in (as their B3 did); `extracted` hands the text alone to the
offline extractor, which must find the slot itself. Our baselines run on the same history.

memopilot_diagnostic.json (MemoPilot IQ): per scenario, its setup messages go through the offline
extractor into the scenario's own project, temporary memories lapse before the test when the scenario
says so (the clock moves two days: past the temporary TTL), and the test question is recalled in that
project with their budget (2500). Context recall = every expected keyword (or a declared alternative)
in the context on alphanumeric boundaries; an outdated-memory error = a context line asserting a
forbidden term (not preceded by rejection language) while naming no expected term; token savings =
1 - context tokens / raw setup tokens with our tokenizer on the exact context, and as they measured it:
len(text)//4 of the memory text (the line without its "- [date type: subject] " label).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from app.lib.tokens import TokenCounter
from bench.quality.embedding import CachedEmbedder
from bench.quality.engram import EngramSystem
from bench.quality.metrics import any_substring
from bench.quality.model import Conversation, Turn
from bench.quality.systems import Baselines
from bench.quality.units import Unit, extracted_units, make_unit, raw_units

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
_LABEL = re.compile(r"^- \[[^\]]*\] ")  # the rendered line's "- [date type: subject] " prefix
MEMOPILOT_BUDGET = 2500
EXTRA_BUDGETS = (128,)

# -- memopilot grading (their deterministic-phrase-negation rules) ------------------------------------
_REJECTION = re.compile(
    r"(?:\bavoid|\bwithout|\bnot|\bnever|\bno longer|\binstead of|\brather than|\bdo not|\bdon't|"
    r"\breplaced|\bsuperseded|\bdeprecated)(?:\s+\S+){0,3}\s*$"
)
_DISCLAIMED = re.compile(
    r"^\s*(?:is|was|has been|should be)\s+(?:outdated|replaced|superseded|deprecated|incorrect|not recommended)"
)


def keyword_pattern(keyword: str) -> re.Pattern[str]:
    """A keyword on alphanumeric boundaries, a simple plural allowed ('npm' never matches 'pnpm')."""
    return re.compile(rf"(?<![a-z0-9]){re.escape(keyword.casefold())}(?:s|es)?(?![a-z0-9])")


def mentions(keyword: str, text: str) -> bool:
    return keyword_pattern(keyword).search(text.casefold()) is not None


def expected_present(keyword: str, alternatives: Sequence[str], text: str) -> bool:
    return any(mentions(k, text) for k in (keyword, *alternatives))


def asserts(term: str, text: str) -> bool:
    """The text uses `term` and does not reject it in the same breath."""
    lowered = text.casefold()
    for m in keyword_pattern(term).finditer(lowered):
        before = lowered[max(0, m.start() - 48) : m.start()]
        after = lowered[m.end() :]
        if not _REJECTION.search(before) and not _DISCLAIMED.match(after):
            return True
    return False


def outdated_error(lines: Sequence[str], expected: Sequence[str], forbidden: Sequence[str]) -> bool:
    """A context line asserts a forbidden term while mentioning no expected term."""
    for line in lines:
        if any(mentions(e, line) for e in expected):
            continue
        if any(asserts(f, line) for f in forbidden):
            return True
    return False


def context_recall(scenario: dict[str, Any], context: str) -> bool | None:
    expected = scenario.get("expected_answer_keywords") or []
    if not expected:
        return None
    alternatives = scenario.get("expected_answer_alternatives") or {}
    return all(expected_present(k, alternatives.get(k, []), context) for k in expected)


# -- shared plumbing --------------------------------------------------------------------------------------
@dataclass(slots=True)
class SeedRow:
    suite: str
    variant: str
    embedder: str
    system: str
    case: str
    budget: int
    recall: bool | None
    stale: bool | None
    tokens: int
    source_tokens: int = 0
    source_chars4: int = 0
    context_chars4: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


def _conversation(
    conv_id: str, texts: Sequence[str], *, one_session: bool, project: str | None = None
) -> Conversation:
    turns = [
        Turn(
            id=str(i),
            role="user",
            text=text,
            at=T0 + timedelta(hours=i) if not one_session else T0 + timedelta(minutes=i),
            session_id="s0" if one_session else f"s{i}",
            project=project,
        )
        for i, text in enumerate(texts)
    ]
    return Conversation(conv_id, conv_id, turns)


def _baseline_contexts(
    units: Sequence[Unit],
    counter: TokenCounter,
    matrix: Any,
    qvec: Any,
    query: str,
    budget: int,
    systems: Sequence[str],
) -> dict[str, str]:
    baselines = Baselines(units, matrix, counter)
    out = {}
    for system in systems:
        order, _ = baselines.ranking(system, query, qvec)
        out[system] = baselines.retrieve(system, order, budget).context
    return out


# -- qma personas ---------------------------------------------------------------------------------------------
async def run_personas(
    data: dict[str, Any],
    embedder: CachedEmbedder,
    engram: EngramSystem | None,
    baselines: Sequence[str],
    counter: TokenCounter,
) -> tuple[list[SeedRow], dict[str, Any]]:
    label = embedder.label
    budgets = sorted({*map(int, data.get("budgets", [8, 16, 32, 64])), *EXTRA_BUDGETS})
    rows: list[SeedRow] = []
    capability: dict[str, Any] = {}
    for persona in data["personas"]:
        items = [*persona["sessions"], *persona["distractors"]]
        texts = [str(i["text"]) for i in items]
        conv = _conversation(f"qma-{persona['id']}", texts, one_session=False)
        at = conv.end + timedelta(days=1)
        raw = raw_units(conv, counter)
        queries = persona["queries"]
        await embedder.warm([u.content for u in raw] + [q["query"] for q in queries], "embed qma")
        matrix = embedder.matrix([u.content for u in raw])
        if engram is not None:
            subject_units = [
                make_unit(counter, turn, str(item["text"]), "preference", str(item["subject"]))
                for turn, item in zip(conv.turns, items, strict=True)
            ]
            calls, forgets = extracted_units(conv, counter)
            variants = {"subjects": ([[u] for u in subject_units], None), "extracted": (calls, forgets)}
            for variant, (unit_calls, removed) in variants.items():
                user = f"qma|{label}|{variant}|{persona['id']}"
                await engram.ingest(user, unit_calls, removed)
                for query in queries:
                    for budget in budgets:
                        got = await engram.recall(user, query["query"], None, budget, at)
                        rows.append(
                            _persona_row(variant, label, "engram", query, budget, got.context, got.tokens)
                        )
                if persona["id"] == "ryan" and variant == "subjects":
                    capability = await _capabilities(engram, user, data.get("capability_cases", {}), at)
        for query in queries:
            qvec = embedder.matrix([query["query"]])[0]
            for budget in budgets:
                contexts = _baseline_contexts(raw, counter, matrix, qvec, query["query"], budget, baselines)
                for system, context in contexts.items():
                    rows.append(
                        _persona_row("raw", label, system, query, budget, context, counter.count(context))
                    )
    return rows, capability


def _persona_row(
    variant: str, embedder: str, system: str, query: dict[str, Any], budget: int, context: str, tokens: int
) -> SeedRow:
    return SeedRow(
        suite="qma_personas",
        variant=variant,
        embedder=embedder,
        system=system,
        case=str(query["id"]),
        budget=budget,
        recall=any_substring([str(query["expected"])], context),
        stale=any_substring([str(s) for s in query.get("stale", [])], context)
        if query.get("stale")
        else False,
        tokens=tokens,
    )


async def _capabilities(
    engram: EngramSystem, user: str, cases: dict[str, Any], at: datetime
) -> dict[str, Any]:
    """Their two capability checks on persona ryan (subjects variant): abstention and temporal."""
    out: dict[str, Any] = {}
    for case in cases.get("abstention", []):
        got = await engram.recall(user, case["query"], None, 64, at)
        out[f"abstention:{case['id']}"] = not any(mentions(t, got.context) for t in case["must_not_contain"])
    present = past = None
    for case in cases.get("temporal", []):
        if "subject" not in case:
            got = await engram.recall(user, case["query"], None, 64, at)
            present = any_substring([case["expected"]], got.context) and not any_substring(
                case.get("stale", []), got.context
            )
        else:
            past = await _original_value(engram, user, case["subject"], case["expected"])
    if present is not None and past is not None:
        out["temporal_accuracy"] = (int(present) + int(past)) / 2
    return out


async def _original_value(engram: EngramSystem, user: str, subject: str, expected: str) -> bool:
    """The oldest version in the slot's history (GET /v1/memories/{id}/history) names `expected`."""
    async with engram.store.transaction(commit=False) as session:
        service = engram.service(session)
        memories = (await service.list_memories(user, subject=subject, status="active")).items
        if not memories:
            return False
        history = await service.history(memories[0].id)
        return any_substring([expected], history.versions[-1].content)


# -- memopilot diagnostic -------------------------------------------------------------------------------------
async def run_memopilot(
    data: dict[str, Any],
    embedder: CachedEmbedder,
    engram: EngramSystem | None,
    baselines: Sequence[str],
    counter: TokenCounter,
) -> list[SeedRow]:
    label = embedder.label
    rows: list[SeedRow] = []
    for scenario in data["scenarios"]:
        sid = str(scenario["id"])
        project = f"eval-{sid}"
        setup = [str(m) for m in scenario["setup_messages"]]
        conv = _conversation(f"memopilot-{sid}", setup, one_session=True, project=project)
        question = str(scenario["test_question"])
        at = conv.end + (
            timedelta(days=2) if scenario.get("expire_temporary_before_test") else timedelta(hours=1)
        )
        raw = raw_units(conv, counter)
        source_tokens = sum(counter.count(m) for m in setup)
        source_chars4 = sum(len(m) // 4 for m in setup)
        contexts: dict[str, tuple[str, int]] = {}
        if engram is not None:
            calls, forgets = extracted_units(conv, counter)
            user = f"memopilot|{label}"
            await engram.ingest(user, calls, forgets)
            got = await engram.recall(user, question, project, MEMOPILOT_BUDGET, at)
            contexts["engram"] = (got.context, got.tokens)
        await embedder.warm([u.content for u in raw] + [question], "embed memopilot")
        matrix = embedder.matrix([u.content for u in raw])
        qvec = embedder.matrix([question])[0]
        for system, context in (
            _baseline_contexts(raw, counter, matrix, qvec, question, MEMOPILOT_BUDGET, baselines)
        ).items():
            contexts[system] = (context, counter.count(context))
        expected = [str(k) for k in scenario.get("expected_answer_keywords") or []]
        forbidden = [str(k) for k in scenario.get("must_not_use_keywords") or []]
        for system, (context, tokens) in contexts.items():
            lines = [line for line in context.split("\n") if line.strip()]
            rows.append(
                SeedRow(
                    suite="memopilot_diagnostic",
                    variant="extracted" if system == "engram" else "raw",
                    embedder=label,
                    system=system,
                    case=sid,
                    budget=MEMOPILOT_BUDGET,
                    recall=context_recall(scenario, context),
                    stale=outdated_error(lines, expected, forbidden),
                    tokens=tokens,
                    source_tokens=source_tokens,
                    source_chars4=source_chars4,
                    context_chars4=sum(len(_LABEL.sub("", line)) // 4 for line in lines),
                )
            )
    return rows

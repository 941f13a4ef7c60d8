"""Mapping between HTTP payloads and the memory service's inputs and results."""

from __future__ import annotations

import msgspec

from app.api.schemas import (
    EventOut,
    HistoryOut,
    IncludedOut,
    MemoryIn,
    MemoryOut,
    PassageOut,
    RecalledOut,
    RecallIn,
    RecallOut,
    RememberOut,
    SkippedOut,
    TraceOut,
)
from app.db.models import MemoryEvent
from app.memory.models import (
    History,
    PassageShown,
    RecallInput,
    RecallResult,
    RememberInput,
    RememberResult,
)
from app.vocabulary import MemoryStatus, Source


def remember_input(body: MemoryIn, source: Source = Source.API) -> RememberInput:
    """The body's fields are the input's, by name."""
    return RememberInput(**msgspec.structs.asdict(body), source=source)


def remember_out(result: RememberResult) -> RememberOut:
    return RememberOut(
        memory=MemoryOut.of(result.memory),
        action=result.action,
        superseded=result.superseded,
        proposals=result.proposals,
        redacted=result.redacted,
    )


def recall_input(body: RecallIn) -> RecallInput:
    """The body's fields are the input's, by name."""
    return RecallInput(**msgspec.structs.asdict(body))


def _passage_out(passage: PassageShown | None) -> PassageOut | None:
    return None if passage is None else PassageOut(index=passage.index, start=passage.start, end=passage.end)


def recall_out(result: RecallResult, explain: bool) -> RecallOut:
    trace = None
    if explain:
        trace = TraceOut(
            included=[
                IncludedOut(
                    id=m.memory.id,
                    score=m.score,
                    tokens=m.tokens,
                    superseded=m.memory.status == MemoryStatus.SUPERSEDED,
                    relevance=m.relevance,
                    passage=None if m.passage is None else m.passage.index,
                )
                for m in result.memories
            ],
            skipped=[
                SkippedOut(
                    id=s.id, reason=s.reason, score=s.score, relevance=s.relevance, components=s.components
                )
                for s in result.skipped
            ],
            candidates=result.candidates,
            plan=result.plan,
            min_relevance=result.min_relevance,
            tokens_used=result.tokens_used,
            tokens_left=result.token_budget - result.tokens_used,
            latency_ms=result.latency_ms,
            as_of=result.moment.as_of,
            as_of_kind=None if result.moment.as_of is None else result.moment.kind,
            past=result.moment.past,
        )
    return RecallOut(
        context=result.context,
        token_budget=result.token_budget,
        tokens_used=result.tokens_used,
        memories=[
            RecalledOut(
                memory=MemoryOut.of(m.memory),
                score=m.score,
                relevance=m.relevance,
                components=m.components,
                tokens=m.tokens,
                passage=_passage_out(m.passage),
            )
            for m in result.memories
        ],
        trace=trace,
    )


def event_out(event: MemoryEvent) -> EventOut:
    return EventOut(**{f: getattr(event, f) for f in EventOut.__struct_fields__})


def history_out(history: History) -> HistoryOut:
    events = [e for e in history.events if isinstance(e, MemoryEvent)]
    return HistoryOut(
        events=[event_out(e) for e in events],
        versions=[MemoryOut.of(m) for m in history.versions],
        current=history.current,
    )

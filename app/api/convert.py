"""Mapping between HTTP payloads and the memory service's inputs and results."""

from __future__ import annotations

from app.api.schemas import (
    EventOut,
    HistoryOut,
    IncludedOut,
    MemoryIn,
    MemoryOut,
    RecalledOut,
    RecallIn,
    RecallOut,
    RememberOut,
    SkippedOut,
    TraceOut,
)
from app.db.models import MemoryEvent
from app.memory.models import History, RecallInput, RecallResult, RememberInput, RememberResult


def remember_input(body: MemoryIn, source: str = "api") -> RememberInput:
    return RememberInput(
        user_id=body.user_id,
        content=body.content,
        type=body.type,
        subject=body.subject,
        project_id=body.project_id,
        session_id=body.session_id,
        importance=body.importance,
        confidence=body.confidence,
        privacy=body.privacy,
        tags=list(body.tags),
        expires_at=body.expires_at,
        ttl_seconds=body.ttl_seconds,
        pinned=body.pinned,
        observed_at=body.observed_at,
        summary=body.summary,
        source=source,
    )


def remember_out(result: RememberResult) -> RememberOut:
    return RememberOut(
        memory=MemoryOut.of(result.memory),
        action=result.action,
        superseded=result.superseded,
        proposals=result.proposals,
        redacted=result.redacted,
    )


def recall_input(body: RecallIn) -> RecallInput:
    return RecallInput(
        user_id=body.user_id,
        query=body.query,
        project_id=body.project_id,
        token_budget=body.token_budget,
        types=body.types,
        prefer_type=body.prefer_type,
        min_relevance=body.min_relevance,
        include_sensitive=body.include_sensitive,
        explain=body.explain,
    )


def recall_out(result: RecallResult, explain: bool) -> RecallOut:
    trace = None
    if explain:
        trace = TraceOut(
            included=[IncludedOut(id=m.memory.id, score=m.score, tokens=m.tokens) for m in result.memories],
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
            )
            for m in result.memories
        ],
        trace=trace,
    )


def event_out(event: MemoryEvent) -> EventOut:
    return EventOut(
        id=event.id,
        memory_id=event.memory_id,
        user_id=event.user_id,
        project_id=event.project_id,
        kind=event.kind,
        actor=event.actor,
        reason=event.reason,
        details=event.details,
        created_at=event.created_at,
    )


def history_out(history: History) -> HistoryOut:
    events = [e for e in history.events if isinstance(e, MemoryEvent)]
    return HistoryOut(
        events=[event_out(e) for e in events], versions=[MemoryOut.of(m) for m in history.versions]
    )

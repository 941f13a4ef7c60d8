"""Token metering: every model call of a request is recorded, then written as `usage_events` rows.

A `UsageMeter` lives for one request; the process-wide embedder reports to whichever meter is current
(a context variable), so embedding calls are metered without passing the meter through every layer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from app.lib.metrics import observe_model_call


@dataclass(frozen=True, slots=True)
class Usage:
    """What one model call cost, as the provider reported it (or tiktoken counted it)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class UsageRecord:
    kind: str  # chat | embed | extract | dream
    model: str
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    latency_ms: float


@dataclass(slots=True)
class UsageMeter:
    """What one request spent, call by call."""

    records: list[UsageRecord] = field(default_factory=list)

    def record(self, kind: str, model: str, usage: Usage, latency_ms: float) -> None:
        observe_model_call(kind, model, usage.prompt_tokens, usage.completion_tokens, latency_ms)
        self.records.append(
            UsageRecord(
                kind, model, usage.prompt_tokens, usage.completion_tokens, usage.total_tokens, latency_ms
            )
        )

    def summary(self) -> dict[str, Any]:
        """`{prompt_tokens, completion_tokens, total_tokens, by_model: {model: {...}}}`."""
        by_model: dict[str, dict[str, int]] = {}
        for r in self.records:
            entry = by_model.setdefault(
                r.model, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
            )
            entry["calls"] += 1
            entry["prompt_tokens"] += r.prompt_tokens
            entry["completion_tokens"] += r.completion_tokens
            entry["total_tokens"] += r.total_tokens
        return {
            "prompt_tokens": sum(r.prompt_tokens for r in self.records),
            "completion_tokens": sum(r.completion_tokens for r in self.records),
            "total_tokens": sum(r.total_tokens for r in self.records),
            "by_model": by_model,
        }


_current: ContextVar[UsageMeter | None] = ContextVar("engram_usage_meter", default=None)


def current_meter() -> UsageMeter | None:
    return _current.get()


@contextmanager
def metering(meter: UsageMeter) -> Iterator[UsageMeter]:
    """Make `meter` the one model calls in this context report to."""
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)


def record_embedding_usage(model: str, total_tokens: int, latency_ms: float) -> None:
    """The embedder's usage callback: one `embed` record on the current request's meter, if any."""
    meter = _current.get()
    if meter is not None:
        meter.record("embed", model, Usage(total_tokens, 0, total_tokens), latency_ms)
    else:  # no request meters it (a REST remember or recall): the metrics still count the call
        observe_model_call("embed", model, total_tokens, 0, latency_ms)

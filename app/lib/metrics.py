"""Prometheus metrics for `GET /metrics`: requests, recall internals, model calls, the pool, errors.

Labels carry only bounded, non-identifying values: route templates (`/v1/memories/{memory_id:uuid}`,
never a concrete path), statuses, recall stages and plans, model names and kinds, error codes. Never a
tenant or user id, never content.

One `Metrics` per app (`create_app` builds it; nothing here runs at import time). Code that has no
handle on the app (the recall engine, the usage meter) reports through the module functions below,
which reach the metrics of the request being served through a context variable set by the middleware;
outside a request they do nothing.

Several workers (`engram serve --workers N`): the parent sets `PROMETHEUS_MULTIPROC_DIR` before the
workers start, every worker writes its samples to files there, and a scrape (answered by any one
worker) sums all of them (prometheus-client's multiprocess mode). Gauges sum the live workers only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.tracing import trace_model_call, trace_recall

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_STAGE_SECONDS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
_COUNTS = (0, 1, 5, 10, 25, 50, 100, 250, 500, 1000)
_TOKENS = (0, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192)

_current: ContextVar[Metrics | None] = ContextVar("engram_metrics", default=None)


def multiprocess_enabled() -> bool:
    return bool(os.environ.get(MULTIPROC_ENV))


class Metrics:
    """Every series the service exports, in a registry of its own (so tests can build many apps)."""

    def __init__(self) -> None:
        self.multiprocess = multiprocess_enabled()
        # In multiprocess mode samples go to files, not to a registry; a scrape reads the files.
        own = None if self.multiprocess else CollectorRegistry()
        self._registry = own
        self._http_series(own)
        self._recall_series(own)
        self._model_series(own)
        self._pool_series(own)
        self._engines: dict[str, AsyncEngine] = {}

    def _http_series(self, own: CollectorRegistry | None) -> None:
        http = ["method", "route", "status"]
        self.requests = Counter(
            "engram_http_requests", "HTTP requests by route template and status", http, registry=own
        )
        self.latency = Histogram(
            "engram_http_request_duration_seconds",
            "HTTP request latency by route template and status",
            http,
            buckets=_SECONDS,
            registry=own,
        )
        self.in_flight = Gauge(
            "engram_http_requests_in_flight",
            "Requests being served",
            registry=own,
            multiprocess_mode="livesum",
        )
        self.errors = Counter(
            "engram_errors", "Error responses by machine code and status", ["code", "status"], registry=own
        )

    def _recall_series(self, own: CollectorRegistry | None) -> None:
        self.recall_stage = Histogram(
            "engram_recall_stage_seconds",
            "Time per recall stage (embed, sql, score, pack, reinforce, total)",
            ["stage"],
            buckets=_STAGE_SECONDS,
            registry=own,
        )
        self.recall_candidates = Histogram(
            "engram_recall_candidates", "Candidates scored per recall", buckets=_COUNTS, registry=own
        )
        self.recall_memories = Histogram(
            "engram_recall_memories",
            "Memories packed into the context per recall",
            buckets=_COUNTS,
            registry=own,
        )
        self.recall_tokens = Histogram(
            "engram_recall_tokens_used", "Context tokens per recall", buckets=_TOKENS, registry=own
        )
        self.recalls = Counter("engram_recalls", "Recalls by plan (exact or hnsw)", ["plan"], registry=own)

    def _model_series(self, own: CollectorRegistry | None) -> None:
        model = ["kind", "model"]
        self.model_calls = Counter(
            "engram_model_calls",
            "Model calls by kind (chat, embed, extract, dream) and model",
            model,
            registry=own,
        )
        self.model_tokens = Counter(
            "engram_model_tokens",
            "Model tokens by kind, model and direction (prompt, completion)",
            [*model, "direction"],
            registry=own,
        )
        self.model_latency = Histogram(
            "engram_model_call_duration_seconds", "Model call latency", model, buckets=_SECONDS, registry=own
        )

    def _pool_series(self, own: CollectorRegistry | None) -> None:
        self.pool_in_use = Gauge(
            "engram_db_pool_connections_in_use",
            "Database connections checked out, per pool",
            ["pool"],
            registry=own,
            multiprocess_mode="livesum",
        )
        self.pool_size = Gauge(
            "engram_db_pool_size",
            "Database connections a pool keeps (its pool_size)",
            ["pool"],
            registry=own,
            multiprocess_mode="livesum",
        )

    # -- the database pools --------------------------------------------------------------------------
    def watch_pool(self, name: str, engine: AsyncEngine) -> None:
        """Track a pool's checked-out connections through its checkout and checkin events."""
        pool: Any = engine.sync_engine.pool
        self._engines[name] = engine
        self.pool_size.labels(name).set(pool.size())
        in_use = self.pool_in_use.labels(name)
        event.listen(pool, "checkout", lambda *_: in_use.inc())
        event.listen(pool, "checkin", lambda *_: in_use.dec())

    def _refresh_pools(self) -> None:
        # A connection detached from its pool never checks in: the pool's own count corrects the drift.
        for name, engine in self._engines.items():
            self.pool_in_use.labels(name).set(engine.sync_engine.pool.checkedout())  # type: ignore[attr-defined]

    # -- exposition ----------------------------------------------------------------------------------
    def render(self) -> tuple[bytes, str]:
        """The Prometheus text exposition of every series (all workers' in multiprocess mode)."""
        self._refresh_pools()
        if self._registry is not None:
            return generate_latest(self._registry), CONTENT_TYPE_LATEST
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST

    def close(self) -> None:
        """Drop this process's live gauges from the multiprocess files (its counters stay counted)."""
        if self.multiprocess:
            multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    # -- the HTTP middleware -------------------------------------------------------------------------
    def middleware(self, app: ASGIApp) -> ASGIApp:
        """Makes these metrics current for the request (the access log, inside it, reports the request)."""

        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return
            token = _current.set(self)
            self.in_flight.inc()
            try:
                await app(scope, receive, send)
            finally:
                self.in_flight.dec()
                _current.reset(token)

        return middleware


def observe_request(method: str, path_template: str | None, status: int, seconds: float) -> None:
    """Called by the access log once per HTTP request, with the route's template (never the path, which
    carries ids and would grow without bound); None: no route matched."""
    metrics = _current.get()
    if metrics is None:
        return
    labels = (method, path_template or "<unmatched>", str(status))
    metrics.requests.labels(*labels).inc()
    metrics.latency.labels(*labels).observe(seconds)


def observe_recall(
    latency_ms: Mapping[str, float], *, candidates: int, memories: int, tokens_used: int, plan: str
) -> None:
    """Called by the recall engine with each recall's stage timings and sizes."""
    trace_recall(latency_ms, candidates=candidates, memories=memories, tokens_used=tokens_used, plan=plan)
    metrics = _current.get()
    if metrics is None:
        return
    for stage, ms in latency_ms.items():
        metrics.recall_stage.labels(stage).observe(ms / 1000)
    metrics.recall_candidates.observe(candidates)
    metrics.recall_memories.observe(memories)
    metrics.recall_tokens.observe(tokens_used)
    metrics.recalls.labels(plan).inc()


def observe_model_call(
    kind: str, model: str, prompt_tokens: int, completion_tokens: int, latency_ms: float
) -> None:
    """Called for every model call (the usage meter's records, the embedder's calls)."""
    trace_model_call(kind, model, prompt_tokens, completion_tokens, latency_ms)
    metrics = _current.get()
    if metrics is None:
        return
    metrics.model_calls.labels(kind, model).inc()
    metrics.model_tokens.labels(kind, model, "prompt").inc(prompt_tokens)
    metrics.model_tokens.labels(kind, model, "completion").inc(completion_tokens)
    metrics.model_latency.labels(kind, model).observe(latency_ms / 1000)


def observe_error(code: str, status: int) -> None:
    """Called by the error handler for every error response."""
    metrics = _current.get()
    if metrics is not None:
        metrics.errors.labels(code, str(status)).inc()

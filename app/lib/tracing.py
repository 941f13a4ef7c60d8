"""OpenTelemetry tracing, when configured: a span per HTTP request, per recall and per model call.

Off unless `ENGRAM_OTEL_ENDPOINT` names an OTLP/HTTP traces endpoint (a collector, Jaeger, Tempo...), and
then only if the `otel` extra is installed; the exporter also reads the standard `OTEL_EXPORTER_OTLP_*`
variables (headers, timeout, certificate). Spans are batched and exported off the request path.

What a span carries is what a metric label may carry (see app/lib/metrics.py), plus sizes and
durations: the method, the route's template (never the concrete path), the status, the error code, the
recall's plan, stage timings and counts, the model's name and kind and its token counts. Never a tenant
or user id, never a memory id, never content, never a query string. A request that arrives with a W3C
`traceparent` header continues that trace.

The recall and model-call spans are children of the request span, recorded when the work has finished
from the timings the code already measures (their start is the end minus the measured duration), so
the code that does the work has no tracing of its own to carry.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app.lib.logging import get_logger

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

log = get_logger("engram.tracing")

# The tracing of the app serving the current request, and that request's span.
_current: ContextVar[tuple[Tracing, Span] | None] = ContextVar("engram_request_span", default=None)


class TracingUnavailable(RuntimeError):
    """Tracing was configured but the `otel` extra is not installed."""


class Tracing:
    """One tracer provider per app (per worker process), exporting over OTLP/HTTP in batches."""

    def __init__(self, provider: TracerProvider, tracer: Tracer) -> None:
        self._provider = provider
        self._tracer = tracer

    @classmethod
    def configure(cls, endpoint: str, service_name: str) -> Tracing:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:  # pragma: no cover - the extra is installed wherever tests run
            raise TracingUnavailable(
                "ENGRAM_OTEL_ENDPOINT is set but OpenTelemetry is not installed: install the 'otel' extra"
            ) from exc
        # A provider of our own, not the global one: tests build many apps in one process, and a library
        # that traces through the global provider must not send its spans (and their attributes) here.
        provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        log.info("tracing", exporter="otlp-http")
        return cls(provider, provider.get_tracer("engram"))

    def shutdown(self) -> None:
        """Export what is still queued, then stop (the app's shutdown)."""
        self._provider.shutdown()

    def middleware(self, app: ASGIApp) -> ASGIApp:
        """A server span around each HTTP request, current for the recall and model spans inside it."""
        from opentelemetry import trace
        from opentelemetry.propagate import extract
        from opentelemetry.trace import SpanKind, Status, StatusCode

        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return
            carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
            method = scope.get("method", "")
            status = 500

            async def send_wrapper(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            span = self._tracer.start_span(
                method,
                context=extract(carrier),
                kind=SpanKind.SERVER,
                attributes={"http.request.method": method},
            )
            token = _current.set((self, span))
            try:
                with trace.use_span(span, end_on_exit=False, record_exception=False):
                    await app(scope, receive, send_wrapper)
            finally:
                _current.reset(token)
                route = scope.get("path_template") or "<unmatched>"
                span.update_name(f"{method} {route}")
                span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))
                span.end()

        return middleware

    def child(self, parent: Span, name: str, duration_ms: float, attributes: Mapping[str, Any]) -> None:
        """Record a finished piece of the request's work as a child span of `parent`."""
        from opentelemetry import trace

        end = time.time_ns()
        span = self._tracer.start_span(
            name,
            context=trace.set_span_in_context(parent),
            start_time=end - int(duration_ms * 1_000_000),
            attributes=dict(attributes),
        )
        span.end(end_time=end)


def trace_recall(
    latency_ms: Mapping[str, float], *, candidates: int, memories: int, tokens_used: int, plan: str
) -> None:
    """Called with each recall's stage timings and sizes (where the metrics get them)."""
    current = _current.get()
    if current is None:
        return
    tracing, parent = current
    attributes: dict[str, Any] = {
        "engram.recall.plan": plan,
        "engram.recall.candidates": candidates,
        "engram.recall.memories": memories,
        "engram.recall.tokens_used": tokens_used,
    }
    attributes.update({f"engram.recall.{stage}_ms": round(ms, 3) for stage, ms in latency_ms.items()})
    tracing.child(parent, "recall", latency_ms.get("total", sum(latency_ms.values())), attributes)


def trace_model_call(
    kind: str, model: str, prompt_tokens: int, completion_tokens: int, latency_ms: float
) -> None:
    """Called for every model call (chat, extraction, dreaming, embedding), like the metrics."""
    current = _current.get()
    if current is None:
        return
    tracing, parent = current
    attributes = {
        "gen_ai.operation.name": kind,
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": prompt_tokens,
        "gen_ai.usage.output_tokens": completion_tokens,
    }
    tracing.child(parent, f"model {kind}", latency_ms, attributes)

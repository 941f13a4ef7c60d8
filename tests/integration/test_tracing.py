"""OpenTelemetry: with an OTLP endpoint set, spans reach a collector on loopback, with no ids or content.

The collector is a plain HTTP server that records what the real OTLP/HTTP exporter posts; the test decodes
the protobuf requests with OpenTelemetry's own message types.
"""

from __future__ import annotations

import gzip
import uuid
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from app.lib.settings import Settings
from tests.conftest import Api, running_client
from tests.support.scripted_http import Answer, Received, scripted_http


@dataclass(frozen=True)
class Exported:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, object]
    service: str


def _value(value: AnyValue) -> object:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def exported(received: list[Received]) -> list[Exported]:
    spans = []
    for request in received:
        body = request.body
        if request.headers.get("Content-Encoding", request.headers.get("content-encoding")) == "gzip":
            body = gzip.decompress(body)
        message = ExportTraceServiceRequest()
        message.ParseFromString(body)
        for resource in message.resource_spans:
            service = {a.key: _value(a.value) for a in resource.resource.attributes}["service.name"]
            spans.extend(
                Exported(
                    name=span.name,
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_id=span.parent_span_id.hex(),
                    attributes={a.key: _value(a.value) for a in span.attributes},
                    service=str(service),
                )
                for scoped in resource.scope_spans
                for span in scoped.spans
            )
    return spans


async def test_request_recall_and_model_spans_reach_the_collector_without_ids_or_content(
    settings: Settings, api: Api
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    content = f"The deploy freeze starts on Friday {uuid.uuid4().hex}"
    trace_id = uuid.uuid4().hex
    with scripted_http([Answer(200, {})]) as collector:
        traced = settings.model_copy(
            update={"otel_endpoint": f"{collector.url}/v1/traces", "otel_service_name": "engram-test"}
        )
        async with running_client(traced) as client:
            own = Api(client, api.key, api.tenant_id)
            memory = (await own.remember(user_id=user, content=content, subject="deploy freeze"))["memory"]
            recall = await client.post(
                "/v1/recall",
                json={"user_id": user, "query": "when does the deploy freeze start?"},
                headers={**own.headers, "traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"},
            )
            assert recall.status_code == 200, recall.text
            assert recall.json()["memories"]
            assert (await own.post("/v1/recall", {"user_id": user})).status_code == 422
        # Leaving the client shut the app down, and with it the provider, which exported what was queued.
    spans = exported(collector.received)
    assert collector.received
    assert all(r.path == "/v1/traces" for r in collector.received)
    assert {s.service for s in spans} == {"engram-test"}

    by_name: dict[str, list[Exported]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    (write,) = by_name["POST /v1/memories"]
    assert write.attributes["http.route"] == "/v1/memories"
    assert write.attributes["http.response.status_code"] == 201
    recalls = by_name["POST /v1/recall"]
    assert sorted(int(str(s.attributes["http.response.status_code"])) for s in recalls) == [200, 422]
    (served,) = [s for s in recalls if s.attributes["http.response.status_code"] == 200]
    # The caller's traceparent is continued: same trace, the caller's span as the parent.
    assert served.trace_id == trace_id
    assert served.parent_id == "00f067aa0ba902b7"

    (recall_span,) = by_name["recall"]
    assert recall_span.parent_id == served.span_id
    assert recall_span.trace_id == trace_id
    assert recall_span.attributes["engram.recall.plan"] == "exact"
    assert int(str(recall_span.attributes["engram.recall.memories"])) >= 1
    assert {"engram.recall.embed_ms", "engram.recall.sql_ms", "engram.recall.total_ms"} <= set(
        recall_span.attributes
    )
    embeds = by_name["model embed"]
    assert any(s.parent_id == served.span_id for s in embeds)  # the query's embedding
    assert any(s.parent_id == write.span_id for s in embeds)  # the memory's embedding
    assert all(isinstance(s.attributes["gen_ai.request.model"], str) for s in embeds)

    values = [str(v) for s in spans for v in (s.name, *s.attributes.values())]
    for private in (str(api.tenant_id), user, memory["id"], "deploy freeze", "Friday", api.key):
        assert not any(private in value for value in values), private

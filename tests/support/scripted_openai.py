"""A scripted OpenAI-compatible HTTP server for tests.

Runs a hand-written ASGI app under uvicorn on ``127.0.0.1`` (ephemeral port) in a
background thread, so tests exercise the real ``openai`` SDK end to end: request
serialisation, retries, timeouts, error mapping.

    with ScriptedOpenAI() as server:
        server.script_chat([ChatStep.tools(ToolCall("remember", {"text": "hi"})), "done"])
        server.fail_next(status=429, times=1)
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=2)
        ...
        assert [c.status for c in server.calls] == [429, 200, 200]

Endpoints:

* ``POST /v1/chat/completions`` answers with the next scripted step. A step is a
  ``str`` (assistant text), a :class:`ChatStep`, a mapping with the same keys as
  ChatStep, or a callable receiving the request body and returning one of those.
  An empty queue is answered with a 500 whose message says so (and
  ``x-should-retry: false`` so the SDK fails at once instead of retrying).
* ``POST /v1/embeddings`` returns deterministic :class:`HashEmbedder` vectors
  (``embedding_dim`` wide, or the request's ``dimensions``), usage counting
  ``len(text.split())`` tokens per input; ``encoding_format`` float or base64.
* ``GET /v1/models`` lists ``models``.

Fault injection (:meth:`ScriptedOpenAI.fail_next`, :meth:`ScriptedOpenAI.delay_next`)
applies to the next N requests of one path or of any path. Error responses carry
OpenAI-shaped bodies; 429/5xx carry ``Retry-After: 0`` and ``retry-after-ms: 1`` so SDK
retries are near-instant. A delayed request whose client gives up (timeout) is logged
with status 499 and consumes nothing but the delay.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import struct
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from app.embeddings.hashing import HashEmbedder
from tests.support.live_server import LiveServer

__all__ = ["ChatStep", "ScriptedCall", "ScriptedOpenAI", "Step", "ToolCall"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CLIENT_CLOSED = 499  # nginx's convention for "client went away before the response"


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One request the server received.

    ``status`` is what was answered (499 if the client disconnected during an injected delay).
    """

    path: str
    body: dict[str, Any]
    status: int
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function call the scripted assistant makes.

    ``arguments`` may be a mapping (JSON-encoded for the wire) or a raw string, which is
    sent verbatim so tests can feed the client malformed JSON. ``id`` defaults to
    ``call_<n>`` with a per-server counter.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ChatStep:
    """One scripted assistant turn.

    ``usage`` may give ``prompt_tokens`` / ``completion_tokens`` (``total_tokens`` is
    their sum unless given); missing values are computed from the request and reply
    sizes (``len(json) // 4``, at least 1), so they are deterministic.
    ``finish_reason`` defaults to "tool_calls" when there are tool calls, else "stop".
    """

    content: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    usage: Mapping[str, int] | None = None
    finish_reason: str | None = None

    @classmethod
    def text(cls, content: str, *, usage: Mapping[str, int] | None = None) -> ChatStep:
        """An assistant text reply."""
        return cls(content=content, usage=usage)

    @classmethod
    def tools(
        cls, *calls: ToolCall, content: str | None = None, usage: Mapping[str, int] | None = None
    ) -> ChatStep:
        """An assistant turn that calls one or more tools."""
        return cls(content=content, tool_calls=calls, usage=usage)


StepValue = str | ChatStep | Mapping[str, Any]
Step = StepValue | Callable[[dict[str, Any]], StepValue]


@dataclass(slots=True)
class _Fault:
    path: str | None  # None: any path
    remaining: int
    status: int = 0
    seconds: float = 0.0
    message: str | None = None
    code: str | None = None


class _ScriptError(Exception):
    """The script itself is wrong (empty queue, bad step): answered as a non-retryable 500."""


_ERROR_DEFAULTS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Bad request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: {key}."),
    403: ("permission_error", None, "You are not allowed to access this resource."),
    404: ("invalid_request_error", "not_found", "Not found."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: (
        "server_error",
        "service_unavailable",
        "The engine is currently overloaded, please try again later.",
    ),
}


def _normalise_path(path: str | None) -> str | None:
    if path is None:
        return None
    return path if path.startswith("/") else "/v1/" + path


class ScriptedOpenAI:
    """Scripted OpenAI-compatible server on 127.0.0.1 in a background thread (see module docstring).

    Args:
        embedding_dim: width of ``/v1/embeddings`` vectors when the request has no ``dimensions``.
        models: ids listed by ``GET /v1/models``.
        reverse_embeddings: answer ``/v1/embeddings`` with ``data`` in reverse order (each item
            keeps its correct ``index``) so clients' ordering by index is exercised.
    """

    def __init__(
        self,
        *,
        embedding_dim: int = 64,
        models: Sequence[str] = ("scripted-chat", "scripted-embedding"),
        reverse_embeddings: bool = False,
    ) -> None:
        self.embedding_dim = embedding_dim
        self.models = tuple(models)
        self.reverse_embeddings = reverse_embeddings
        self._lock = threading.Lock()
        self._steps: deque[Step] = deque()
        self._faults: list[_Fault] = []
        self._delays: list[_Fault] = []
        self._calls: list[ScriptedCall] = []
        self._tool_call_counter = 0
        self._completion_counter = 0
        self._embedders: dict[int, HashEmbedder] = {}
        self._closing = threading.Event()
        self._live: LiveServer | None = None
        self._port: int | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Bind an ephemeral port and serve in a daemon thread; returns once accepting connections."""
        if self._live is not None:
            raise RuntimeError("ScriptedOpenAI already started")
        self._closing.clear()
        self._live = LiveServer(self._app, lifespan="off", name="scripted-openai").start()
        self._port = self._live.port
        return self

    def stop(self) -> None:
        """Stop serving: injected delays are cut short and the thread is joined."""
        self._closing.set()
        if self._live is not None:
            self._live.stop()
        self._live = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, ready for ``AsyncOpenAI(base_url=...)``."""
        if self._port is None:
            raise RuntimeError("ScriptedOpenAI not started")
        return f"http://127.0.0.1:{self._port}/v1"

    # ------------------------------------------------------------------ scripting

    def script_chat(self, steps: Iterable[Step]) -> None:
        """Append steps to the chat completion queue (one step per request)."""
        with self._lock:
            self._steps.extend(steps)

    @property
    def pending_steps(self) -> int:
        """Chat steps not consumed yet."""
        with self._lock:
            return len(self._steps)

    def fail_next(
        self,
        status: int = 500,
        *,
        times: int = 1,
        path: str | None = None,
        message: str | None = None,
        code: str | None = None,
    ) -> None:
        """Answer the next ``times`` requests (to ``path`` like "/v1/embeddings" or "embeddings", or any)
        with an OpenAI-shaped error of ``status``. A 401's default message echoes the presented key,
        as real providers do, so tests can check that it is redacted downstream.
        """
        with self._lock:
            self._faults.append(
                _Fault(_normalise_path(path), times, status=status, message=message, code=code)
            )

    def delay_next(self, seconds: float, *, times: int = 1, path: str | None = None) -> None:
        """Sleep ``seconds`` before answering the next ``times`` requests (to trigger client timeouts)."""
        with self._lock:
            self._delays.append(_Fault(_normalise_path(path), times, seconds=seconds))

    def reset(self) -> None:
        """Forget steps, faults and the call log."""
        with self._lock:
            self._steps.clear()
            self._faults.clear()
            self._delays.clear()
            self._calls.clear()

    @property
    def calls(self) -> list[ScriptedCall]:
        """A snapshot of every request received so far, in arrival order of their answers."""
        with self._lock:
            return list(self._calls)

    def wait_for_calls(self, count: int, *, timeout: float = 5.0) -> list[ScriptedCall]:
        """Block until at least ``count`` calls are logged (a 499 is logged only once the server
        notices the disconnect, slightly after the client has given up)."""
        deadline = time.monotonic() + timeout
        while len(calls := self.calls) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {count} calls, got {len(calls)}: {calls}")
            time.sleep(0.01)
        return calls

    async def wait_for_calls_async(self, count: int, *, within: float = 5.0) -> list[ScriptedCall]:
        """:meth:`wait_for_calls` for async tests: yields to the loop instead of blocking it."""
        deadline = time.monotonic() + within
        while len(calls := self.calls) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {count} calls, got {len(calls)}: {calls}")
            await asyncio.sleep(0.01)
        return calls

    def calls_to(self, path: str) -> list[ScriptedCall]:
        """Calls to one path ("/v1/embeddings" or "embeddings")."""
        wanted = _normalise_path(path)
        return [call for call in self.calls if call.path == wanted]

    # ------------------------------------------------------------------ ASGI app

    def _take(self, faults: list[_Fault], path: str) -> _Fault | None:
        with self._lock:
            for fault in faults:
                if fault.remaining > 0 and (fault.path is None or fault.path == path):
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        faults.remove(fault)
                    return fault
        return None

    def _record(self, call: ScriptedCall) -> None:
        with self._lock:
            self._calls.append(call)

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method: str = scope["method"]
        path: str = scope["path"]
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}

        raw = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            raw.extend(message.get("body", b""))
            if not message.get("more_body", False):
                break
        try:
            parsed = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            parsed = {"_raw": raw.decode("utf-8", "replace")}
        body: dict[str, Any] = parsed if isinstance(parsed, dict) else {"_json": parsed}

        delay = self._take(self._delays, path)
        if delay is not None and not await self._sleep_unless_disconnected(delay.seconds, receive):
            self._record(ScriptedCall(path, body, CLIENT_CLOSED, method, headers))
            return

        fault = self._take(self._faults, path)
        payload: object
        extra: dict[str, str] = {}
        if fault is not None:
            status, payload, extra = self._error(fault, headers)
        else:
            try:
                status, payload = self._route(method, path, body)
            except _ScriptError as exc:
                status = 500
                payload = {
                    "error": {
                        "message": str(exc),
                        "type": "scripted_openai_error",
                        "param": None,
                        "code": None,
                    }
                }
                extra = {"x-should-retry": "false"}
        self._record(ScriptedCall(path, body, status, method, headers))
        await self._respond(send, status, payload, extra)

    async def _sleep_unless_disconnected(self, seconds: float, receive: Receive) -> bool:
        """Sleep; False if the client disconnected (or the server is stopping) meanwhile."""

        async def wait_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        watcher = asyncio.ensure_future(wait_disconnect())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        try:
            # Short slices so stop() never waits for a long injected delay.
            while (remaining := deadline - loop.time()) > 0:
                if self._closing.is_set():
                    return False
                done, _ = await asyncio.wait({watcher}, timeout=min(remaining, 0.05))
                if done:
                    return False
            return True
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    @staticmethod
    async def _respond(send: Send, status: int, payload: object, extra: Mapping[str, str]) -> None:
        data = json.dumps(payload).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        headers += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    def _error(self, fault: _Fault, headers: Mapping[str, str]) -> tuple[int, dict[str, Any], dict[str, str]]:
        kind, default_code, default_message = _ERROR_DEFAULTS.get(
            fault.status, ("server_error" if fault.status >= 500 else "invalid_request_error", None, "Error.")
        )
        key = headers.get("authorization", "").removeprefix("Bearer ").strip()
        message = fault.message if fault.message is not None else default_message.format(key=key)
        payload = {
            "error": {"message": message, "type": kind, "param": None, "code": fault.code or default_code}
        }
        extra: dict[str, str] = {}
        if fault.status == 429 or fault.status >= 500:
            # The SDK prefers retry-after-ms; "Retry-After: 0" alone would fall back to 0.5 s backoff.
            extra = {"retry-after": "0", "retry-after-ms": "1"}
        return fault.status, payload, extra

    def _route(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, object]:
        if method == "POST" and path == "/v1/chat/completions":
            return self._chat(body)
        if method == "POST" and path == "/v1/embeddings":
            return self._embeddings(body)
        if method == "GET" and path == "/v1/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in self.models]
            return 200, {"object": "list", "data": data}
        return 404, {
            "error": {
                "message": f"ScriptedOpenAI: no route for {method} {path}",
                "type": "invalid_request_error",
                "param": None,
                "code": "not_found",
            }
        }

    # ------------------------------------------------------------------ chat

    def _chat(self, body: dict[str, Any]) -> tuple[int, object]:
        if body.get("stream"):
            raise _ScriptError("ScriptedOpenAI does not support stream=true")
        if not isinstance(body.get("messages"), list):
            raise _ScriptError("chat completion request without a 'messages' list")
        with self._lock:
            if not self._steps:
                raise _ScriptError(
                    "ScriptedOpenAI: chat script exhausted - a chat completion was requested but no "
                    f"scripted step is left (request had {len(body['messages'])} messages)"
                )
            raw_step = self._steps.popleft()
            self._completion_counter += 1
            completion_id = f"chatcmpl-scripted-{self._completion_counter}"
        if callable(raw_step):
            try:
                value = raw_step(body)
            except Exception as exc:
                raise _ScriptError(f"scripted step callable raised {type(exc).__name__}: {exc}") from exc
        else:
            value = raw_step
        step = self._coerce(value)

        tool_calls = [self._wire_tool_call(call) for call in step.tool_calls]
        message: dict[str, Any] = {"role": "assistant", "content": step.content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        finish_reason = step.finish_reason or ("tool_calls" if tool_calls else "stop")

        usage = dict(step.usage or {})
        prompt = {"messages": body["messages"], "tools": body.get("tools")}
        usage.setdefault("prompt_tokens", max(1, len(json.dumps(prompt, sort_keys=True)) // 4))
        reply_size = len(step.content or "") + (
            len(json.dumps(tool_calls, sort_keys=True)) if tool_calls else 0
        )
        usage.setdefault("completion_tokens", max(1, reply_size // 4))
        usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])

        return 200, {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted-chat"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
            "usage": usage,
        }

    @staticmethod
    def _coerce(value: StepValue) -> ChatStep:
        if isinstance(value, ChatStep):
            return value
        if isinstance(value, str):
            return ChatStep(content=value)
        if isinstance(value, Mapping):
            calls: list[ToolCall] = []
            for raw in value.get("tool_calls") or ():
                if isinstance(raw, ToolCall):
                    calls.append(raw)
                elif isinstance(raw, Mapping) and "function" in raw:  # OpenAI wire shape
                    fn = raw["function"]
                    calls.append(ToolCall(fn["name"], fn.get("arguments", "{}"), raw.get("id")))
                elif isinstance(raw, Mapping):
                    calls.append(ToolCall(raw["name"], raw.get("arguments", {}), raw.get("id")))
                else:
                    raise _ScriptError(f"bad tool call in scripted step: {raw!r}")
            return ChatStep(
                content=value.get("content"),
                tool_calls=tuple(calls),
                usage=value.get("usage"),
                finish_reason=value.get("finish_reason"),
            )
        raise _ScriptError(f"bad scripted step: {value!r}")

    def _wire_tool_call(self, call: ToolCall) -> dict[str, Any]:
        with self._lock:
            self._tool_call_counter += 1
            counter = self._tool_call_counter
        arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(dict(call.arguments))
        return {
            "id": call.id or f"call_{counter}",
            "type": "function",
            "function": {"name": call.name, "arguments": arguments},
        }

    # ------------------------------------------------------------------ embeddings

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, object]:
        raw_input = body.get("input")
        texts = [raw_input] if isinstance(raw_input, str) else raw_input
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return 400, {
                "error": {
                    "message": "ScriptedOpenAI: 'input' must be a non-empty string or list of strings",
                    "type": "invalid_request_error",
                    "param": "input",
                    "code": None,
                }
            }
        dim = int(body.get("dimensions") or self.embedding_dim)
        with self._lock:
            embedder = self._embedders.setdefault(dim, HashEmbedder(dim))
        as_base64 = body.get("encoding_format") == "base64"
        data: list[dict[str, Any]] = []
        for index, text in enumerate(texts):
            vector = embedder.embed_text(text)
            embedding: object = (
                base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector
            )
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        if self.reverse_embeddings:
            data.reverse()
        tokens = sum(len(text.split()) for text in texts)
        return 200, {
            "object": "list",
            "data": data,
            "model": body.get("model", "scripted-embedding"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

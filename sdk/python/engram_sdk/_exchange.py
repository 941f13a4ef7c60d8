"""One request's exchange, written once without I/O: build it, retry it, decode what came back.

`exchange` is a generator that yields what it needs done (send this request, or pause this long) and
is sent what happened (the response, or a transport error thrown in). The sync and async clients each
drive it with their own `send` and `sleep`; every decision lives here.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from engram_sdk._version import __version__
from engram_sdk.errors import (
    ConnectionFailedError,
    UnexpectedResponseError,
    error_from_response,
    parse_retry_after,
)
from engram_sdk.requests import Request, result_type
from engram_sdk.retry import RetryPolicy

T = TypeVar("T")
DEFAULT_URL = "http://localhost:8000"
DEFAULT_TIMEOUT_S = 60.0  # a chat runs several model turns


@dataclass(frozen=True, slots=True)
class Pause:
    seconds: float


Step = httpx.Request | Pause
Exchange = Generator[Step, httpx.Response | None, T]


@dataclass(frozen=True, slots=True)
class ClientConfig:
    base_url: str
    headers: dict[str, str] = field(repr=False)  # carries the API key
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @classmethod
    def build(
        cls, base_url: str | None, api_key: str | None, retry: RetryPolicy | None, headers: dict[str, str]
    ) -> ClientConfig:
        """Explicit arguments first, then `ENGRAM_URL` / `ENGRAM_API_KEY`, then the local default."""
        url = (base_url or os.environ.get("ENGRAM_URL") or DEFAULT_URL).rstrip("/")
        key = api_key or os.environ.get("ENGRAM_API_KEY")
        merged = {"user-agent": f"engram-sdk-python/{__version__}", "accept": "application/json"}
        if key:
            merged["authorization"] = f"Bearer {key}"
        merged.update({k.lower(): v for k, v in headers.items()})
        return cls(base_url=url, headers=merged, retry=retry or RetryPolicy())


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def build_request(config: ClientConfig, request: Request[Any]) -> httpx.Request:
    """The HTTP request for a request description (only the arguments that were given are sent)."""
    route = request.route
    fields: dict[str, Any] = msgspec.to_builtins(request) if route.raw_body is None else {}
    path = route.path
    for name in list(fields):
        if "{" + name + "}" in path:
            path = path.replace("{" + name + "}", quote(str(fields.pop(name)), safe=""))
    if "{" in path:
        raise TypeError(f"{type(request).__name__}: a path argument is missing ({path})")
    params: list[tuple[str, str | int | float | bool | None]] = list(route.query)
    headers = dict(config.headers)
    content: bytes | None = None
    if route.raw_body is not None:
        raw = getattr(request, route.raw_body)
        content = raw if isinstance(raw, bytes) else msgspec.json.encode(raw)
    elif route.method in {"GET", "DELETE"}:
        params += [(k, _query_value(v)) for k, v in fields.items()]
    else:
        content = msgspec.json.encode(fields)
    if content is not None:
        headers["content-type"] = "application/json"
    return httpx.Request(
        route.method,
        config.base_url + path,
        params=params,
        content=content,
        headers=headers,
    )


def decode(request: Request[T], response: httpx.Response) -> T:
    into = result_type(type(request))
    if into is str:
        text: Any = response.text
        return text  # type: ignore[no-any-return]
    try:
        return msgspec.json.decode(response.content, type=into)  # type: ignore[no-any-return]
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UnexpectedResponseError(
            f"{request.route.method} {request.route.path}: the response does not decode ({exc})",
            status=response.status_code,
        ) from exc


def exchange(config: ClientConfig, request: Request[T]) -> Exchange[T]:
    """Send `request` until it succeeds, fails for good, or runs out of retries; return its result."""
    outgoing = build_request(config, request)
    accept = request.route.accept
    attempt = 0
    while True:
        try:
            response = yield outgoing
        except httpx.TransportError as exc:
            wait = config.retry.after_failure(attempt, exc, outgoing.method)
            if wait is None:
                raise ConnectionFailedError(
                    f"{outgoing.method} {outgoing.url}: {type(exc).__name__}: {exc}"
                ) from exc
        else:
            assert response is not None
            if response.status_code in accept:
                return decode(request, response)
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            wait = config.retry.after_status(attempt, response.status_code, retry_after)
            if wait is None:
                raise error_from_response(response)
        yield Pause(wait)
        attempt += 1


class EventLines:
    """A server-sent events parser: feed it lines, get each event's data when the event ends."""

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> str | None:
        if line == "":
            data, self._data = self._data, []
            return "\n".join(data) if data else None
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None


def stream_request(config: ClientConfig, request: Request[Any]) -> httpx.Request:
    outgoing = build_request(config, request)
    outgoing.headers["accept"] = "text/event-stream"
    return outgoing


def decode_event(request: Request[T], data: str) -> T:
    try:
        return msgspec.json.decode(data, type=result_type(type(request)))  # type: ignore[no-any-return]
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UnexpectedResponseError(f"{request.route.path}: an event does not decode ({exc})") from exc

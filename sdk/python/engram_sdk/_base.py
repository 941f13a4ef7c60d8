"""The two ways of running an exchange: blocking (httpx.Client) and asyncio (httpx.AsyncClient).

Only the I/O differs: each driver performs the steps `exchange` yields (send, pause) and hands back
what happened. Retries, request building and decoding are shared in `_exchange`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Self, TypeVar

import httpx
import msgspec

from engram_sdk._exchange import (
    DEFAULT_TIMEOUT_S,
    ClientConfig,
    EventLines,
    Exchange,
    Pause,
    decode_event,
    exchange,
    stream_request,
)
from engram_sdk.errors import error_from_response
from engram_sdk.models import Page
from engram_sdk.requests import Request
from engram_sdk.retry import RetryPolicy

T = TypeVar("T")


def following(request: Request[Page[T]], page: Page[T]) -> Request[Page[T]] | None:
    """The request for the page after `page`, or None when it was the last."""
    if not page.next_cursor:
        return None
    return msgspec.structs.replace(request, cursor=page.next_cursor)


class _Client:
    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        retry: RetryPolicy | None,
        headers: dict[str, str] | None,
    ) -> None:
        self._config = ClientConfig.build(base_url, api_key, retry, headers or {})

    @property
    def base_url(self) -> str:
        return self._config.base_url


class SyncClient(_Client):
    """Blocking transport. `base_url` and `api_key` default to `ENGRAM_URL` and `ENGRAM_API_KEY`."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, api_key, retry, headers)
        self._http = http_client or httpx.Client(timeout=timeout)
        self._owns_http = http_client is None

    def _execute(self, request: Request[T]) -> T:
        return self._drive(exchange(self._config, request))

    def _drive(self, steps: Exchange[T]) -> T:
        try:
            step = next(steps)
            while True:
                outcome: httpx.Response | None = None
                if isinstance(step, Pause):
                    time.sleep(step.seconds)
                else:
                    try:
                        outcome = self._http.send(step)
                    except httpx.TransportError as exc:
                        step = steps.throw(exc)
                        continue
                step = steps.send(outcome)
        except StopIteration as done:
            result: T = done.value
            return result

    def _iterate(self, request: Request[Page[T]]) -> Iterator[T]:
        current: Request[Page[T]] | None = request
        while current is not None:
            page = self._execute(current)
            yield from page.items
            current = following(current, page)

    def _events(self, request: Request[T]) -> Iterator[T]:
        """Each event of a server-sent stream, decoded, until the server closes it (no reconnect)."""
        response = self._http.send(stream_request(self._config, request), stream=True)
        try:
            if response.status_code != 200:
                response.read()
                raise error_from_response(response)
            lines = EventLines()
            for line in response.iter_lines():
                data = lines.feed(line)
                if data is not None:
                    yield decode_event(request, data)
        finally:
            response.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClient(_Client):
    """asyncio transport. `base_url` and `api_key` default to `ENGRAM_URL` and `ENGRAM_API_KEY`."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, api_key, retry, headers)
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._owns_http = http_client is None

    async def _execute(self, request: Request[T]) -> T:
        return await self._drive(exchange(self._config, request))

    async def _drive(self, steps: Exchange[T]) -> T:
        try:
            step = next(steps)
            while True:
                outcome: httpx.Response | None = None
                if isinstance(step, Pause):
                    await asyncio.sleep(step.seconds)
                else:
                    try:
                        outcome = await self._http.send(step)
                    except httpx.TransportError as exc:
                        step = steps.throw(exc)
                        continue
                step = steps.send(outcome)
        except StopIteration as done:
            result: T = done.value
            return result

    async def _iterate(self, request: Request[Page[T]]) -> AsyncIterator[T]:
        current: Request[Page[T]] | None = request
        while current is not None:
            page = await self._execute(current)
            for item in page.items:
                yield item
            current = following(current, page)

    async def _events(self, request: Request[T]) -> AsyncIterator[T]:
        """Each event of a server-sent stream, decoded, until the server closes it (no reconnect)."""
        response = await self._http.send(stream_request(self._config, request), stream=True)
        try:
            if response.status_code != 200:
                await response.aread()
                raise error_from_response(response)
            lines = EventLines()
            async for line in response.aiter_lines():
                data = lines.feed(line)
                if data is not None:
                    yield decode_event(request, data)
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

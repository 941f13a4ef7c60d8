"""Concurrent embed calls gathered into one model call while the model is busy.

A forward pass of a small encoder costs a few milliseconds whatever the batch holds (up to a few
dozen short texts), so queries that arrive while one encode runs wait for it anyway: they are
gathered and run as the next single batch instead of one after another. The first call on an idle
batcher runs at once (no window is waited for), so a lone query pays nothing for the batching.

One worker task drains the queue: it takes every queued request up to `max_texts` texts (always at
least one request, so a large write runs alone), encodes them in one call on the encoding thread,
and hands each caller its own slice of the result, in order. When a shared call fails, each of its
requests runs again alone, so an error reaches the callers whose texts cause it and no others (a
model that fails on everything fails every caller, each with its own error). The worker exits when
the queue is empty and is started again by the next call, so nothing outlives the requests and no
task is left to cancel at shutdown.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["MicroBatcher"]

Vectors = list[list[float]]


@dataclass(slots=True)
class _Request:
    texts: list[str]
    future: asyncio.Future[Vectors]


@dataclass(slots=True)
class BatchStats:
    """What the batcher did, for tests and operators: model calls, and calls that shared one."""

    encode_calls: int = 0  # model invocations
    requests: int = 0  # embed calls served
    batched_requests: int = 0  # embed calls that ran in a batch with at least one other
    largest_batch: int = 0  # most requests one model call served


class MicroBatcher:
    """Runs `encode` (an awaitable over a list of texts) for concurrent callers, batching the waiting ones."""

    def __init__(self, encode: Callable[[list[str]], Awaitable[Vectors]], *, max_texts: int = 64) -> None:
        if max_texts < 1:
            raise ValueError("max_texts must be >= 1")
        self._encode = encode
        self._max_texts = max_texts
        self._queue: deque[_Request] = deque()
        self._worker: asyncio.Task[None] | None = None
        self.stats = BatchStats()

    async def run(self, texts: list[str]) -> Vectors:
        """The vectors of `texts`, in order; computed alone or with other callers' texts."""
        loop = asyncio.get_running_loop()
        request = _Request(texts, loop.create_future())
        self._queue.append(request)
        worker = self._worker
        if worker is None or worker.done() or worker.get_loop() is not loop:
            self._worker = loop.create_task(self._drain(), name="engram-embed-batcher")
        return await request.future

    def _take(self) -> list[_Request]:
        """The next batch: the oldest request, then more while they fit in `max_texts`."""
        batch = [self._queue.popleft()]
        size = len(batch[0].texts)
        while self._queue and size + len(self._queue[0].texts) <= self._max_texts:
            request = self._queue.popleft()
            batch.append(request)
            size += len(request.texts)
        return [r for r in batch if not r.future.done()]  # a caller cancelled while queued: skip it

    async def _drain(self) -> None:
        while self._queue:
            batch = self._take()
            if not batch:
                continue
            try:
                await self._run_batch(batch)
            except BaseException:  # this task cancelled (loop shutdown): its callers are too
                for request in batch:
                    request.future.cancel()
                raise

    async def _run_batch(self, batch: list[_Request]) -> None:
        texts = [text for request in batch for text in request.texts]
        self._count(len(batch))
        try:
            vectors = await self._encode(texts)
            if len(vectors) != len(texts):
                raise RuntimeError(f"the encoder returned {len(vectors)} vectors for {len(texts)} texts")
        except Exception as exc:  # noqa: BLE001 - the model's error reaches its callers, and only theirs
            if len(batch) > 1:  # one caller's bad input must not fail the others: each again, alone
                for request in batch:
                    await self._run_batch([request])
            elif not batch[0].future.done():
                batch[0].future.set_exception(exc)
            return
        start = 0
        for request in batch:
            end = start + len(request.texts)
            if not request.future.done():
                request.future.set_result(vectors[start:end])
            start = end

    def _count(self, requests: int) -> None:
        stats = self.stats
        stats.encode_calls += 1
        stats.requests += requests
        if requests > 1:
            stats.batched_requests += requests
        stats.largest_batch = max(stats.largest_batch, requests)

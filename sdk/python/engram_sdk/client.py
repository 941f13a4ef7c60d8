"""The two clients: the same operations (`Operations`) on a blocking or an asyncio transport."""

from __future__ import annotations

from engram_sdk._base import AsyncClient, SyncClient
from engram_sdk.operations import Operations


class Engram(SyncClient, Operations):
    """Blocking client. `with Engram("http://localhost:8000", api_key) as engram: engram.recall(...)`.

    Retries 429 and 5xx answers (and connections that failed) with exponential backoff and jitter,
    waiting at least the server's `Retry-After`; see `RetryPolicy`. Errors raise `EngramError`
    subclasses, one per API error code.
    """


class AsyncEngram(AsyncClient, Operations):
    """asyncio client: `async with AsyncEngram(url, api_key) as engram: await engram.recall(...)`."""

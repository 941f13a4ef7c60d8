"""The SDK against the running app: uvicorn on a loopback port, the suite's test database."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from app.lib.settings import Settings
from app.main import create_app
from engram_sdk import AsyncEngram, Engram
from tests.conftest import NewTenant
from tests.support.live_server import serve_in_thread
from tests.support.sdk import run

Connect = Callable[..., Any]


@pytest.fixture(scope="session")
def live_url(settings: Settings) -> Iterator[str]:
    with serve_in_thread(create_app(settings)) as url:
        yield url


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def connect(mode: str, live_url: str) -> AsyncIterator[Connect]:
    """Makes clients of this test's kind (`Engram` or `AsyncEngram`); closes them afterwards."""
    made: list[Any] = []

    def make(api_key: str | None, **options: Any) -> Any:
        options.setdefault("base_url", live_url)
        client = (Engram if mode == "sync" else AsyncEngram)(api_key=api_key, **options)
        made.append(client)
        return client

    yield make
    for client in made:
        await run(client.close() if isinstance(client, Engram) else client.aclose())


@pytest.fixture
async def sdk(connect: Connect, new_tenant: NewTenant) -> Any:
    _, key = await new_tenant()
    return connect(key)


@pytest.fixture
async def other_sdk(connect: Connect, new_tenant: NewTenant) -> Any:
    _, key = await new_tenant()
    return connect(key)

"""Shared fixtures: one real PostgreSQL (with pgvector) per session; each test uses fresh tenants."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db.session import create_engine
from app.lib.clock import Clock
from app.lib.settings import Settings
from app.main import create_app
from app.tenancy import admin
from tests.support.database import TestDatabase, test_database
from tests.support.probe import install_probe, written_contents
from tests.support.settings import test_settings

pytest_plugins = ["tests.support.logsink", "tests.support.migrations", "pytester"]


@pytest.fixture(scope="session")
def database(pytestconfig: pytest.Config) -> Iterator[TestDatabase]:
    with test_database() as db:
        install_probe(db.owner_url)
        yield db
        # Read while the server still runs: the log sink checks these against every captured line.
        sink = pytestconfig.pluginmanager.get_plugin("engram-logsink")  # tests.support.logsink.LOG_SINK
        if sink is not None:
            sink.contents.update(written_contents(db.owner_url))


@pytest.fixture(scope="session")
def settings(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return test_settings(database, tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
async def owner_engine(database: TestDatabase) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database.owner_url, pool_size=2, max_overflow=2)
    yield engine
    await engine.dispose()


@pytest.fixture(scope="session")
async def app_engine(database: TestDatabase) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database.app_url, pool_size=2, max_overflow=2)
    yield engine
    await engine.dispose()


NewTenant = Callable[[], Awaitable[tuple[uuid.UUID, str]]]


@pytest.fixture
def new_tenant(owner_engine: AsyncEngine) -> NewTenant:
    """Creates a fresh tenant; returns (tenant_id, api key). Fresh tenants isolate tests from each other."""

    async def make() -> tuple[uuid.UUID, str]:
        async with async_sessionmaker(owner_engine)() as session, session.begin():
            created = await admin.create_tenant(session, f"t-{uuid.uuid4().hex[:12]}")
        return created.tenant_id, created.plaintext

    return make


@asynccontextmanager
async def running_client(
    settings: Settings, clock: Clock | None = None
) -> AsyncIterator[AsyncTestClient[Any]]:
    app = create_app(settings, clock=clock)
    async with AsyncTestClient(app=app) as client:
        yield client


@pytest.fixture(scope="session")
async def client(settings: Settings) -> AsyncIterator[AsyncTestClient[Any]]:
    async with running_client(settings) as c:
        yield c


class Api:
    """A tenant's view of the API: the client plus its key."""

    def __init__(self, client: httpx.AsyncClient, key: str, tenant_id: uuid.UUID) -> None:
        self.client = client
        self.key = key
        self.tenant_id = tenant_id
        self.headers = {"Authorization": f"Bearer {key}"}

    async def post(self, path: str, json: Any = None) -> httpx.Response:
        return await self.client.post(path, json=json, headers=self.headers)

    async def get(self, path: str, **params: Any) -> httpx.Response:
        return await self.client.get(path, params=params, headers=self.headers)

    async def patch(self, path: str, json: Any) -> httpx.Response:
        return await self.client.patch(path, json=json, headers=self.headers)

    async def delete(self, path: str, **params: Any) -> httpx.Response:
        return await self.client.delete(path, params=params, headers=self.headers)

    async def remember(self, **body: Any) -> dict[str, Any]:
        response = await self.post("/v1/memories", body)
        assert response.status_code == 201, response.text
        result: dict[str, Any] = response.json()
        return result

    async def memory(self, memory_id: str) -> dict[str, Any]:
        response = await self.get(f"/v1/memories/{memory_id}")
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    async def recall(self, **body: Any) -> dict[str, Any]:
        response = await self.post("/v1/recall", body)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result


@pytest.fixture
async def api(client: AsyncTestClient[Any], new_tenant: NewTenant) -> Api:
    tenant_id, key = await new_tenant()
    return Api(client, key, tenant_id)


@pytest.fixture
async def other_api(client: AsyncTestClient[Any], new_tenant: NewTenant) -> Api:
    tenant_id, key = await new_tenant()
    return Api(client, key, tenant_id)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]

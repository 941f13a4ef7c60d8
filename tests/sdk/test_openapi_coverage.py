"""Every operation of the served OpenAPI document has an SDK method, and every SDK method a route."""

from __future__ import annotations

import httpx

from engram_sdk import AsyncEngram, Engram, routes

HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


def served_operations(live_url: str) -> set[tuple[str, str]]:
    document = httpx.get(f"{live_url}/schema/openapi.json").raise_for_status().json()
    return {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }


def test_every_openapi_operation_has_an_sdk_method(live_url: str) -> None:
    served = served_operations(live_url)
    table = routes()
    missing = sorted(served - table.keys())
    assert not missing, f"operations without an SDK method (add them to engram_sdk.operations): {missing}"
    stale = sorted(table.keys() - served)
    assert not stale, f"SDK methods for routes the service does not serve: {stale}"
    assert len(served) >= 30


async def test_both_clients_expose_every_method() -> None:
    names = {name for methods in routes().values() for name in methods}
    with Engram(api_key="egm_x") as sync_client:
        async with AsyncEngram(api_key="egm_x") as async_client:
            for client in (sync_client, async_client):
                for name in names:
                    method = getattr(client, name)
                    assert (method.__name__, bool(method.__doc__)) == (name, True)

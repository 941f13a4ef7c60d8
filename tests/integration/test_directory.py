"""GET /v1/users and GET /v1/projects: the ids a person picks from, with counts, paged, one tenant only."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api


async def page(api: Api, path: str, **params: Any) -> dict[str, Any]:
    response = await api.get(path, **params)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def every_item(api: Api, path: str, **params: Any) -> list[dict[str, Any]]:
    """Follows next_cursor to the end, one `limit` at a time."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        body = await page(api, path, cursor=cursor, **params) if cursor else await page(api, path, **params)
        items.extend(body["items"])
        cursor = body["next_cursor"]
        if cursor is None:
            return items


async def test_users_lists_each_user_once_in_order_with_all_and_live_counts(api: Api) -> None:
    await api.remember(user_id="bob", content="Bob likes tea", type="preference", subject="drink")
    await api.remember(user_id="bob", content="Bob likes coffee now", type="preference", subject="drink")
    await api.remember(user_id="ana", content="Ana lives in Porto")
    await api.remember(user_id="ana", content="Ana works on the webshop", project_id="webshop")

    body = await page(api, "/v1/users")
    assert body == {
        "items": [
            {"user_id": "ana", "memories": 2, "live": 2},
            {"user_id": "bob", "memories": 2, "live": 1},  # tea was superseded: stored, not live
        ],
        "next_cursor": None,
    }


async def test_users_pages_with_a_cursor_and_every_user_appears_exactly_once(api: Api) -> None:
    names = [f"user-{i:02d}" for i in range(7)] + ["name/with/slash", "ünïcode"]
    for name in names:
        await api.remember(user_id=name, content=f"{name} has a fact")
    first = await page(api, "/v1/users", limit=3)
    assert len(first["items"]) == 3
    assert first["next_cursor"] is not None
    listed = await every_item(api, "/v1/users", limit=3)
    assert sorted(u["user_id"] for u in listed) == sorted(names)
    assert len(listed) == len(names)


async def test_projects_of_a_user_in_order_without_the_global_scope_or_other_users(api: Api) -> None:
    await api.remember(user_id="ana", content="global fact")
    await api.remember(user_id="ana", content="shop fact", project_id="webshop")
    await api.remember(user_id="ana", content="another shop fact", project_id="webshop")
    await api.remember(user_id="ana", content="api fact", project_id="api")
    await api.remember(user_id="bob", content="bob's project fact", project_id="secret-plan")

    body = await page(api, "/v1/projects", user_id="ana")
    assert body == {
        "items": [
            {"project_id": "api", "memories": 1, "live": 1},
            {"project_id": "webshop", "memories": 2, "live": 2},
        ],
        "next_cursor": None,
    }
    paged = await every_item(api, "/v1/projects", user_id="ana", limit=1)
    assert [p["project_id"] for p in paged] == ["api", "webshop"]
    assert (await page(api, "/v1/projects", user_id="nobody"))["items"] == []


async def test_an_erased_user_leaves_the_directory(api: Api) -> None:
    await api.remember(user_id="gone", content="to be erased", project_id="p")
    await api.remember(user_id="stays", content="kept")
    response = await api.post("/v1/users/gone/erase")
    assert response.status_code == 200, response.text
    assert [u["user_id"] for u in (await page(api, "/v1/users"))["items"]] == ["stays"]
    assert (await page(api, "/v1/projects", user_id="gone"))["items"] == []


async def test_another_tenant_sees_none_of_our_users_or_projects(api: Api, other_api: Api) -> None:
    await api.remember(user_id="shared-name", content="ours", project_id="our-project")
    await api.remember(user_id="only-ours", content="ours too")
    await other_api.remember(user_id="theirs", content="theirs")

    assert [u["user_id"] for u in (await page(other_api, "/v1/users"))["items"]] == ["theirs"]
    assert (await page(other_api, "/v1/projects", user_id="shared-name"))["items"] == []
    # Our cursor, replayed by the other tenant, pages through the other tenant's rows only.
    first = await page(api, "/v1/users", limit=1)
    replay = await page(other_api, "/v1/users", limit=1, cursor=first["next_cursor"])
    assert [u["user_id"] for u in replay["items"]] == ["theirs"]
    assert [u["user_id"] for u in (await page(api, "/v1/users"))["items"]] == ["only-ours", "shared-name"]


async def test_bad_paging_input_is_a_422_in_the_error_shape(api: Api) -> None:
    for path, params in [
        ("/v1/users", {"cursor": "%%%not-base64"}),
        ("/v1/users", {"cursor": "//8="}),  # valid base64, not UTF-8
        ("/v1/users", {"cursor": "AA=="}),  # a NUL, which no identifier (and no PostgreSQL text) holds
        ("/v1/projects", {"user_id": "ana", "cursor": "YQBi"}),  # "a\0b"
        ("/v1/users", {"limit": 0}),
        ("/v1/users", {"limit": 501}),
        ("/v1/projects", {"user_id": "ana", "limit": "many"}),
        ("/v1/projects", {}),  # user_id is required
        ("/v1/users", {"cursor": "x" * 1200}),
    ]:
        response = await api.get(path, **params)
        assert response.status_code in (400, 422), (path, params, response.text)
        body = response.json()
        assert set(body) == {"error", "detail"}, body

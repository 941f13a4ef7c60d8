"""GET /v1/usage/series: tokens per model and kind in time buckets, agreeing with GET /v1/usage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import Api


def window(minutes: int = 30) -> tuple[str, str, datetime]:
    """A window around now, its start on a whole minute (the buckets' origin)."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    since = now - timedelta(minutes=minutes)
    until = now + timedelta(minutes=minutes)
    return since.isoformat(), until.isoformat(), since


async def chat(api: Api, user: str, message: str) -> None:
    response = await api.post("/v1/chat", {"user_id": user, "message": message})
    assert response.status_code == 200, response.text


async def series(api: Api, **params: Any) -> dict[str, Any]:
    response = await api.get("/v1/usage/series", **params)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def test_series_sums_to_the_usage_totals_per_model_and_kind(api: Api) -> None:
    await chat(api, "ana", "I live in Porto")
    await chat(api, "bob", "My favourite colour is green")
    since, until, origin = window()

    body = await series(api, since=since, until=until, bucket="minute")
    assert body["bucket"] == "minute"
    assert body["items"], "two chats were metered"
    for item in body["items"]:
        start = datetime.fromisoformat(item["start"])
        assert (start - origin) % timedelta(minutes=1) == timedelta(0)  # buckets start on the origin's grid
        assert item["total_tokens"] == item["prompt_tokens"] + item["completion_tokens"]
    totals = (await api.get("/v1/usage", since=since, until=until)).json()
    for model, expected in totals["by_model"].items():
        rows = [i for i in body["items"] if i["model"] == model]
        assert sum(r["total_tokens"] for r in rows) == expected["total_tokens"]
        assert sum(r["calls"] for r in rows) == expected["calls"]
    assert {i["kind"] for i in body["items"]} == set(totals["by_kind"])

    ana = await series(api, since=since, until=until, bucket="minute", user_id="ana")
    ana_totals = (await api.get("/v1/usage", since=since, until=until, user_id="ana")).json()
    assert sum(i["total_tokens"] for i in ana["items"]) == ana_totals["total"]["total_tokens"] > 0
    assert sum(i["total_tokens"] for i in ana["items"]) < sum(i["total_tokens"] for i in body["items"])


async def test_a_window_without_calls_is_empty(api: Api) -> None:
    await chat(api, "ana", "I live in Porto")
    body = await series(api, since="2020-01-01T00:00:00Z", until="2020-01-02T00:00:00Z", bucket="hour")
    assert body["items"] == []


async def test_another_tenant_sees_none_of_our_usage(api: Api, other_api: Api) -> None:
    await chat(api, "ana", "I live in Porto")
    since, until, _ = window()
    assert (await series(other_api, since=since, until=until, bucket="minute"))["items"] == []
    assert (await series(other_api, since=since, until=until, bucket="day", user_id="ana"))["items"] == []
    assert (await series(api, since=since, until=until, bucket="minute"))["items"]


async def test_bad_windows_are_a_422_in_the_error_shape(api: Api) -> None:
    for params in [
        {"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"},  # reversed
        {"since": "2026-01-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"},  # empty
        {"since": "2026-01-01T00:00:00Z", "until": "2026-03-01T00:00:00Z", "bucket": "minute"},  # too many
        {"since": "2026-01-01T00:00:00", "until": "2026-01-02T00:00:00Z"},  # no timezone
        {"since": "2026-01-01T00:00:00Z", "until": "2026-01-02T00:00:00Z", "bucket": "week"},
        {"since": "yesterday", "until": "2026-01-02T00:00:00Z"},
        {"until": "2026-01-02T00:00:00Z"},  # since is required
    ]:
        response = await api.get("/v1/usage/series", **params)
        assert response.status_code in (400, 422), (params, response.text)
        assert set(response.json()) == {"error", "detail"}

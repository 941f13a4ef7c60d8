"""Every view, used as a person would: the page asks nothing of any host but the service; the chat shows
each tool call with its arguments and result and the memories used; the usage chart is drawn."""

from __future__ import annotations

import re

from playwright.async_api import expect

from tests.browser.conftest import Tab
from tests.browser.pages import open_view, sign_in, use_user
from tests.browser.tour import seed, tour
from tests.conftest import Api


async def test_no_request_goes_to_any_host_but_the_service(tab: Tab, api: Api) -> None:
    await seed(api)
    seen = [name async for name in tour(tab.page, tab.base, api.key)]
    assert seen == ["chat", "memories", "memory", "recall", "timeline", "dream", "usage", "data"]
    paths = tab.requests.paths()
    # The recorder really saw the page, its modules and every kind of call (it is not vacuous) ...
    assert {
        "/inspector",
        "/inspector/inspector.css",
        "/inspector/js/main.js",
        "/inspector/js/chart.js",
    } <= paths
    assert {"/v1/users", "/v1/chat", "/v1/recall", "/v1/timeline", "/v1/dream", "/v1/usage/series"} <= paths
    assert "/v1/export" in paths
    # ... and none of it left the service.
    assert tab.requests.foreign() == []


async def test_the_page_forbids_other_origins_itself(tab: Tab) -> None:
    response = await tab.page.goto(f"{tab.base}/inspector/")
    assert response is not None
    policy = (await response.all_headers())["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "connect-src 'self'" in policy
    assert "script-src 'self'" in policy
    # A fetch to another host is refused by the browser before any request leaves.
    # (the refused fetch is not even a request: the recorder checked at teardown stays clean)
    outcome = await tab.page.evaluate(
        "fetch('http://example.invalid/x').then(() => 'sent', (e) => 'refused: ' + e.name)"
    )
    assert outcome.startswith("refused")


async def test_chat_shows_tool_calls_with_arguments_and_results_and_the_memories_used(
    tab: Tab, api: Api
) -> None:
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await use_user(page, "dana")
    await open_view(page, "chat")
    await page.fill("textarea[name=message]", "We are switching to Next.js for the frontend")
    await page.keyboard.press("Control+Enter")
    turn = page.locator(".turn.agent").last
    await expect(turn.locator(".tool-call summary")).to_have_text(["remember"])
    await expect(turn.locator(".tool-call .io").first).to_contain_text(
        '"content": "We are switching to Next.js'
    )
    await expect(turn.locator(".tool-call .io").first).to_contain_text('"action": "created"')
    stored = (await api.get("/v1/memories", user_id="dana")).json()["items"]
    assert [m["content"] for m in stored] == ["We are switching to Next.js for the frontend."]

    await page.fill("textarea[name=message]", "Which frontend framework do we use?")
    await page.click(".chat-form button[type=submit]")
    answer = page.locator(".turn.agent").nth(1)
    await expect(answer.locator(".answer")).to_contain_text("Next.js")
    await expect(answer.locator(".used a")).to_have_text([stored[0]["content"]])
    await expect(answer.locator(".used a")).to_have_attribute("href", f"#/memories/{stored[0]['id']}")
    # The new user now appears in the list, with its memory counted.
    await expect(page.locator("#user-select option", has_text="dana (1 live / 1)")).to_have_count(1)

    await open_view(page, "usage")
    await expect(page.locator("svg.chart rect.bar").first).to_be_visible()
    await expect(page.locator("#view")).to_contain_text("engram-offline-1")
    usage = (await api.get("/v1/usage", user_id="dana")).json()
    total = usage["total"]["total_tokens"]
    assert total > 0
    label = re.compile(rf"total {total} tokens$")
    await expect(page.locator("svg.chart")).to_have_attribute("aria-label", label)

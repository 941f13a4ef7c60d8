"""A walk through every view with data worth seeing: the request recorder test and the screenshots share it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from playwright.async_api import Page, expect

from tests.browser.pages import open_view, pick_user, settled, sign_in

USER = "alice"
SEED: list[dict[str, Any]] = [
    {"content": "Use React and Vite for the frontend", "type": "decision", "subject": "frontend framework"},
    {
        "content": "We are switching to Next.js for the frontend",
        "type": "decision",
        "subject": "frontend framework",
    },
    {"content": "I drink coffee every morning", "type": "preference", "subject": "coffee"},
    {"content": "Every morning I drink coffee", "type": "preference", "subject": "morning routine"},
    {"content": "Never deploy on Fridays", "type": "critical_rule", "subject": "deploy day", "pinned": True},
    {"content": "The shop runs on Kubernetes in Frankfurt", "type": "fact", "project_id": "webshop"},
    {"content": "Checkout must stay under 2 seconds", "type": "constraint", "project_id": "webshop"},
    {"content": "Alice is learning Rust", "type": "learning_goal", "privacy": "private"},
]


async def seed(api: Any) -> None:
    """The tour's memories, written through the API (`tests.conftest.Api`, in process or over HTTP)."""
    for body in SEED:
        await api.remember(user_id=USER, **body)


async def tour(page: Page, base: str, key: str) -> AsyncIterator[str]:
    """Signs in and visits each view, doing what the view is for; yields the view's name once it shows it."""
    await sign_in(page, base, key)
    await pick_user(page, USER)

    await open_view(page, "chat")
    await page.fill("textarea[name=message]", "Which frontend framework do we use?")
    await page.click(".chat-form button[type=submit]")
    await expect(page.locator(".turn.agent")).to_have_count(1)
    await page.fill("textarea[name=message]", "I am allergic to peanuts")
    await page.click(".chat-form button[type=submit]")
    await expect(page.locator(".turn.agent")).to_have_count(2)
    yield "chat"

    await open_view(page, "memories")
    await expect(page.locator("article.memory del.content").first).to_be_visible()
    yield "memories"

    await page.locator("article.memory.status-superseded a.successor-link").first.click()
    await settled(page)
    await expect(page.locator("ol.chain li")).to_have_count(2)
    yield "memory"

    await open_view(page, "recall")
    await page.fill("input[name=query]", "which frontend framework and deploy rules?")
    await page.fill("input[name=token_budget]", "48")
    await page.click("#view form button[type=submit]")
    await expect(page.locator("tr.skipped").first).to_be_visible()
    yield "recall"

    await open_view(page, "timeline")
    await expect(page.locator("table.events")).to_be_visible()
    yield "timeline"

    await open_view(page, "dream")
    await page.get_by_role("button", name="Propose consolidations").click()
    await expect(page.locator("article.proposal").first).to_be_visible()
    yield "dream"

    await open_view(page, "usage")
    await expect(page.locator("svg.chart rect.bar").first).to_be_visible()
    yield "usage"

    await open_view(page, "data")
    async with page.expect_download():
        await page.get_by_role("button", name="Export", exact=True).click()
    await expect(page.locator("#view .download a")).to_be_visible()
    yield "data"

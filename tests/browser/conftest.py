"""Browser fixtures: the real app on a loopback port, Debian's chromium, a page whose requests are recorded.

Every test's page must end with no request to another host and no script error; a test that leaves
either fails, whatever it asserted itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from app.lib.settings import Settings
from app.main import create_app
from tests.browser.pages import RequestLog
from tests.support.browser import BrowserMissing, chromium_path, launch
from tests.support.live_server import LiveServer

LAPTOP = {"width": 1280, "height": 800}
# The machine's 2 cores are shared with the database, the server and other work: wait up to 15 s for a
# page to show what a test expects (Playwright's default is 5 s), as long as for an action.
TIMEOUT_MS = 15_000
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="session")
def live_server(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(create_app(settings), name="engram-live") as server:
        yield server


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    try:
        chromium_path()
    except BrowserMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    async with async_playwright() as playwright:
        launched = await launch(playwright)
        yield launched
        await launched.close()


@dataclass
class Tab:
    page: Page
    requests: RequestLog
    base: str
    errors: list[str] = field(default_factory=list)


@pytest.fixture
async def tab(browser: Browser, live_server: LiveServer) -> AsyncIterator[Tab]:
    context = await browser.new_context(viewport=LAPTOP, accept_downloads=True)
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    tab = Tab(page, RequestLog(live_server.url), live_server.url)
    tab.requests.attach(context)
    page.on("pageerror", lambda exc: tab.errors.append(str(exc)))
    try:
        yield tab
    finally:
        await context.close()
    assert tab.requests.urls, "the page made no request at all"
    assert tab.requests.foreign() == [], "requests left the service"
    assert tab.errors == [], "the page raised script errors"

"""What the browser tests and the screenshot script share: the request recorder, signing in, picking."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, Locator, Page, Request, expect


@dataclass
class RequestLog:
    """Every request the browser context makes (pages, modules, fetches, downloads), by URL."""

    origin: str  # the service, e.g. http://127.0.0.1:12345
    urls: list[str] = field(default_factory=list)

    def attach(self, context: BrowserContext) -> None:
        context.on("request", self._record)

    def _record(self, request: Request) -> None:
        self.urls.append(request.url)

    def foreign(self) -> list[str]:
        """Requests that went anywhere but the service (a data: URL is no request to any host)."""
        out = []
        for url in self.urls:
            parts = urlsplit(url)
            if parts.scheme == "data":
                continue
            inner = urlsplit(parts.path) if parts.scheme == "blob" else parts
            if f"{inner.scheme}://{inner.netloc}" != self.origin:
                out.append(url)
        return out

    def paths(self) -> set[str]:
        return {urlsplit(u).path for u in self.urls if urlsplit(u).scheme in ("http", "https")}


async def sign_in(page: Page, base: str, key: str) -> None:
    await page.goto(f"{base}/inspector")
    await page.fill("#key-input", key)
    await page.press("#key-input", "Enter")
    await expect(page.locator("#app")).to_be_visible()
    await settled(page)


async def settled(page: Page) -> None:
    """The view has rendered for the current user, project and route (no render under way)."""
    await expect(page.locator("#view")).not_to_have_attribute("aria-busy", "true")
    await expect(page.locator("#view .view")).to_be_visible()


async def use_user(page: Page, user_id: str) -> None:
    """Pick a user by typing the id (works for a user with no memories yet, too)."""
    await page.fill("#new-user-id", user_id)
    await page.press("#new-user-id", "Enter")
    await expect(page.locator("#user-select")).to_have_value(user_id)
    await settled(page)


async def pick_user(page: Page, user_id: str) -> None:
    """Pick a user from the list."""
    await page.select_option("#user-select", user_id)
    await settled(page)


async def pick_project(page: Page, project_id: str) -> None:
    await page.select_option("#project-select", project_id)
    await settled(page)


async def open_view(page: Page, name: str) -> None:
    """Go to a view through its menu link, as a person would, and wait until it has rendered."""
    await page.click(f"#nav a[data-view={name}]")
    await expect(page.locator(f"#nav a[data-view={name}]")).to_have_attribute("aria-current", "page")
    await settled(page)


async def dismiss(page: Page) -> None:
    """Dismiss the message shown (if any), so that the next one is known to be new."""
    close = page.locator("#notice button")
    if await close.count():
        await close.click()
    await expect(page.locator("#notice .notice")).to_have_count(0)


async def notice(page: Page) -> str:
    """The message at the top of the page, without its Dismiss button."""
    text = page.locator("#notice .notice > span")
    await expect(text).to_be_visible()
    return await text.inner_text()


async def facts(dl: Locator) -> dict[str, str]:
    """A receipt or report shown as a definition list, as {term: value}."""
    terms = await dl.locator("dt").all_inner_texts()
    values = await dl.locator("dd").all_inner_texts()
    return dict(zip(terms, values, strict=True))

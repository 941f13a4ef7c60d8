"""Signing in: a wrong key gets a clear message, the key stays in the tab's session storage (never in a URL),
and another tenant's key sees nothing of ours on any view."""

from __future__ import annotations

from playwright.async_api import expect

from tests.browser.conftest import Tab
from tests.browser.pages import notice, open_view, settled, sign_in, use_user
from tests.conftest import Api


async def test_a_wrong_key_is_refused_with_a_message_and_nothing_is_kept(tab: Tab, api: Api) -> None:
    page = tab.page
    await page.goto(f"{tab.base}/inspector")
    await page.fill("#key-input", api.key[:-4] + "XXXX")
    await page.press("#key-input", "Enter")
    error = page.locator("#signin-error")
    await expect(error).to_be_visible()
    await expect(error).to_contain_text("This API key was not accepted")
    await expect(page.locator("#app")).to_be_hidden()
    assert await page.evaluate("sessionStorage.length") == 0
    assert await page.evaluate("localStorage.length") == 0

    await page.fill("#key-input", api.key)
    await page.press("#key-input", "Enter")
    await expect(page.locator("#app")).to_be_visible()
    stored = await page.evaluate("Object.values(sessionStorage)")
    assert api.key in stored
    assert await page.evaluate("localStorage.length") == 0
    assert all(api.key not in url for url in tab.requests.urls)  # sent as a header, never in a URL


async def test_a_key_revoked_mid_session_sends_the_person_back_to_sign_in(tab: Tab, api: Api) -> None:
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await page.evaluate("sessionStorage.setItem('engram.inspector.key', 'egm_00000000_not-a-real-key')")
    await open_view(page, "timeline")
    await page.fill("#new-user-id", "anyone")
    await page.press("#new-user-id", "Enter")  # the next call carries the revoked key
    await expect(page.locator("#signin-error")).to_contain_text("This API key was not accepted")
    await expect(page.locator("#app")).to_be_hidden()


async def test_sign_in_and_every_view_work_from_the_keyboard(tab: Tab, api: Api) -> None:
    page = tab.page
    await page.goto(f"{tab.base}/inspector")
    await expect(page.locator("#key-input")).to_be_focused()
    await page.keyboard.type(api.key)
    await page.keyboard.press("Enter")
    await expect(page.locator("#app")).to_be_visible()
    for name in ["chat", "memories", "recall", "timeline", "dream", "usage", "data"]:
        link = page.locator(f"#nav a[data-view={name}]")
        await link.focus()
        await page.keyboard.press("Enter")
        await expect(link).to_have_attribute("aria-current", "page")
        await settled(page)


async def test_another_tenants_key_sees_nothing_of_ours(tab: Tab, api: Api, other_api: Api) -> None:
    ours = await api.remember(
        user_id="alice", content="Use React and Vite for the frontend", type="decision", project_id="web"
    )
    memory_id = ours["memory"]["id"]
    page = tab.page
    await sign_in(page, tab.base, other_api.key)
    await expect(page.locator("#user-select option")).to_have_text(["— no users yet —"])

    await use_user(page, "alice")  # the same user id, typed by hand
    await expect(page.locator("#project-select option")).to_have_text(["— none (global memories) —"])
    await open_view(page, "memories")
    await expect(page.locator("#view .memories")).to_contain_text("No memories match.")
    await open_view(page, "timeline")
    await expect(page.locator("#view")).to_contain_text("No events.")
    await open_view(page, "recall")
    await page.fill("input[name=query]", "frontend React Vite")
    await page.click("#view form button[type=submit]")
    await expect(page.locator("#view .recall-result")).to_contain_text("No candidates in this scope.")
    await open_view(page, "dream")
    await expect(page.locator("#view .proposals")).to_contain_text("No proposals.")

    await page.goto(f"{tab.base}/inspector#/memories/{memory_id}")
    message = await notice(page)
    assert "404" in message
    assert "not_found" in message
    await expect(page.locator("#view")).not_to_contain_text("React")
    assert (await api.memory(memory_id))["status"] == "active"  # and it is still ours, untouched

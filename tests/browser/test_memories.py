"""The frontend case end to end in the UI: two decisions for one slot typed into the inspector; the older is
struck through and links to its successor; the owner's actions change the memory and say so."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.browser.conftest import Tab
from tests.browser.pages import dismiss, notice, open_view, pick_project, pick_user, sign_in, use_user
from tests.conftest import Api

REACT = "Use React and Vite for the frontend"
NEXT = "We are switching to Next.js for the frontend"


async def add_memory(page: Page, content: str, *, type: str, subject: str) -> str:
    await dismiss(page)
    form = page.locator("form[aria-label='Add a memory']")
    if not await form.is_visible():
        await page.click("details.add summary")
    await form.locator("textarea[name=content]").fill(content)
    await form.locator("select[name=type]").select_option(type)
    await form.locator("input[name=subject]").fill(subject)
    await form.locator("button[type=submit]").click()
    return await notice(page)


async def test_react_is_struck_through_once_nextjs_is_stored_and_links_to_it(tab: Tab, api: Api) -> None:
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await use_user(page, "alice")
    await open_view(page, "memories")

    assert "Memory created" in await add_memory(page, REACT, type="decision", subject="frontend framework")
    await expect(page.locator("article.memory p.content")).to_have_text([REACT])  # current: not struck
    react_id = await page.locator("article.memory").get_attribute("data-memory-id")
    react_card = page.locator(f"article.memory[data-memory-id='{react_id}']")
    message = await add_memory(page, NEXT, type="decision", subject="frontend framework")
    assert "Memory superseded" in message
    assert "supersedes 1 older memory" in message

    await expect(react_card).to_have_class("memory status-superseded")
    await expect(react_card.locator("del.content")).to_have_text(REACT)
    successor = react_card.locator("a.successor-link")
    await expect(successor).to_have_text(NEXT)
    next_card = page.locator("article.memory.status-active")
    await expect(next_card.locator("p.content")).to_have_text(NEXT)
    await expect(next_card.locator(".badge-active")).to_be_visible()

    # The store agrees with what the page shows.
    listing = (await api.get("/v1/memories", user_id="alice")).json()["items"]
    by_content = {m["content"]: m for m in listing}
    assert by_content[REACT]["id"] == react_id
    assert by_content[REACT]["status"] == "superseded"
    assert by_content[REACT]["superseded_by"] == by_content[NEXT]["id"]
    assert await successor.get_attribute("href") == f"#/memories/{by_content[NEXT]['id']}"

    await successor.click()
    await expect(page.locator("#view h1")).to_have_text("Memory")
    await expect(page.locator("#view article.memory p.content")).to_have_text(NEXT)
    chain = page.locator("#view ol.chain li")
    await expect(chain).to_have_count(2)
    await expect(chain.nth(1).locator("del")).to_have_text(REACT)
    events = page.locator("#view table.events")
    await expect(events).to_contain_text("superseded")
    await expect(events).to_contain_text("exact_slot")


async def test_pin_edit_archive_restore_and_forget_from_the_card(tab: Tab, api: Api) -> None:
    created = await api.remember(user_id="bob", content="Bob prefers tea", type="preference", subject="drink")
    memory_id = created["memory"]["id"]
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await pick_user(page, "bob")
    await open_view(page, "memories")
    card = page.locator(f"article.memory[data-memory-id='{memory_id}']")

    await card.get_by_role("button", name="Pin").click()
    await expect(card.locator(".badge-pinned")).to_be_visible()
    assert (await api.memory(memory_id))["status"] == "pinned"
    await card.get_by_role("button", name="Unpin").click()
    await expect(card.locator(".badge-active")).to_be_visible()

    await card.get_by_role("button", name="Edit").click()
    await card.locator("form.edit textarea").fill("Bob prefers green tea")
    await card.locator("form.edit select").nth(1).select_option("private")  # privacy
    await card.get_by_role("button", name="Save").click()
    await expect(card.locator("p.content")).to_have_text("Bob prefers green tea")
    await expect(card.locator(".badge-privacy-private")).to_be_visible()
    stored = await api.memory(memory_id)
    assert (stored["content"], stored["privacy"]) == ("Bob prefers green tea", "private")

    await card.get_by_role("button", name="Archive").click()
    await expect(card.locator(".badge-archived")).to_be_visible()
    await card.get_by_role("button", name="Restore").click()
    await expect(card.locator(".badge-active")).to_be_visible()

    await card.get_by_role("button", name="Forget").click()
    dialog = page.locator("dialog.confirm")
    await expect(dialog).to_be_visible()
    await dialog.get_by_role("button", name="Cancel").click()
    assert (await api.memory(memory_id))["status"] == "active"  # nothing without a confirmation
    await card.get_by_role("button", name="Forget").click()
    await dialog.get_by_role("button", name="Forget").click()
    await expect(card.locator("del.content")).to_have_text("Bob prefers green tea")
    assert (await api.memory(memory_id))["status"] == "forgotten"


async def test_filters_narrow_the_list_and_a_refused_action_is_a_message(tab: Tab, api: Api) -> None:
    await api.remember(user_id="cy", content=REACT, type="decision", subject="frontend framework")
    await api.remember(user_id="cy", content=NEXT, type="decision", subject="frontend framework")
    await api.remember(user_id="cy", content="Cy lives in Porto", type="fact", project_id="home")
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await pick_user(page, "cy")
    await open_view(page, "memories")
    cards = page.locator("#view article.memory")
    await expect(cards).to_have_count(3)

    await page.select_option("form.filters select[name=status]", "superseded")
    await page.click("form.filters button[type=submit]")
    await expect(cards).to_have_count(1)
    await expect(cards.first.locator("del.content")).to_have_text(REACT)
    # Restoring a memory whose successor is live is refused (409): the page says why.
    await dismiss(page)
    await cards.first.get_by_role("button", name="Restore").click()
    message = await notice(page)
    assert "409" in message
    assert "forget the successor first" in message

    await page.select_option("form.filters select[name=status]", "")
    await page.fill("form.filters input[name=q]", "Porto")
    await page.click("form.filters button[type=submit]")
    await expect(cards).to_have_count(1)
    await expect(cards.first).to_contain_text("Cy lives in Porto")

    await page.fill("form.filters input[name=q]", "")
    await page.click("form.filters button[type=submit]")
    await pick_project(page, "home")
    await expect(cards).to_have_count(1)
    await expect(cards.first).to_contain_text("project home")

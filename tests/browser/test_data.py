"""Data & privacy: an erase asks for the user id typed back, then shows its receipt; an export downloads
and, imported as a file by another tenant, brings the same memories."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from playwright.async_api import expect

from tests.browser.conftest import Tab
from tests.browser.pages import facts, notice, open_view, pick_user, sign_in
from tests.conftest import Api


async def test_an_erase_needs_the_user_id_typed_back_and_shows_its_receipt(tab: Tab, api: Api) -> None:
    await api.remember(user_id="erin", content="Erin lives in Porto")
    await api.remember(user_id="erin", content="Erin works on the shop", project_id="shop")
    await api.remember(user_id="keep", content="Keep this one")
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await pick_user(page, "erin")
    await open_view(page, "data")
    erase = page.get_by_role("button", name="Erase user erin")

    await erase.click()
    dialog = page.locator("dialog.confirm")
    await expect(dialog).to_be_visible()
    confirm = dialog.get_by_role("button", name="Erase for good")
    await expect(confirm).to_be_disabled()
    await dialog.locator("input").fill("eri")
    await expect(confirm).to_be_disabled()
    await page.keyboard.press("Escape")
    await expect(dialog).to_have_count(0)
    assert len((await api.get("/v1/memories", user_id="erin")).json()["items"]) == 2  # nothing erased

    await erase.click()
    await dialog.locator("input").fill("erin")
    await confirm.click()
    receipt = page.locator("#view .receipt")
    await expect(receipt).to_contain_text("Erase receipt")
    shown = await facts(receipt)
    assert shown["user"] == "erin"
    assert shown["memories"] == "2"
    assert int(shown["events"]) >= 2
    assert "Erased user erin" in await notice(page)
    assert (await api.get("/v1/memories", user_id="erin")).json()["items"] == []
    assert len((await api.get("/v1/memories", user_id="keep")).json()["items"]) == 1
    await expect(page.locator("#user-select option", has_text="keep")).to_have_count(1)
    await expect(page.locator("#user-select option", has_text="erin (new)")).to_have_count(1)


async def test_an_export_downloads_and_imports_into_another_tenant(
    tab: Tab, api: Api, other_api: Api, tmp_path: Path
) -> None:
    await api.remember(user_id="ana", content="Ana prefers window seats", type="preference", subject="seat")
    await api.remember(user_id="ana", content="Ana is vegetarian", type="constraint", subject="diet")
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await pick_user(page, "ana")
    await open_view(page, "data")

    async with page.expect_download() as markdown_download:
        await page.select_option("select[name=format]", "markdown")
        await page.get_by_role("button", name="Export", exact=True).click()
    markdown = await asyncio.to_thread(Path(await (await markdown_download.value).path()).read_text)
    assert "Ana prefers window seats" in markdown

    async with page.expect_download() as json_download:
        await page.select_option("select[name=format]", "json")
        await page.get_by_role("button", name="Export", exact=True).click()
    download = await json_download.value
    assert download.suggested_filename.startswith("engram-ana-")
    exported = tmp_path / download.suggested_filename
    await download.save_as(exported)
    document = json.loads(await asyncio.to_thread(exported.read_text))
    assert {m["content"] for m in document["memories"]} == {"Ana prefers window seats", "Ana is vegetarian"}

    await page.get_by_role("button", name="Sign out").click()
    await sign_in(page, tab.base, other_api.key)
    await open_view(page, "data")
    await page.set_input_files("input[type=file]", exported)
    await page.get_by_role("button", name="Import", exact=True).click()
    dialog = page.locator("dialog.confirm")
    await dialog.get_by_role("button", name="Import").click()
    assert "Imported 2 memories" in await notice(page)
    await expect(page.locator("#user-select option", has_text="ana")).to_have_count(1)
    theirs = (await other_api.get("/v1/memories", user_id="ana")).json()["items"]
    assert {m["content"] for m in theirs} == {"Ana prefers window seats", "Ana is vegetarian"}


async def test_a_file_that_is_not_an_export_is_refused_with_the_reason(
    tab: Tab, api: Api, tmp_path: Path
) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"memories": "not a list"}')
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await open_view(page, "data")
    await page.set_input_files("input[type=file]", bad)
    await page.get_by_role("button", name="Import", exact=True).click()
    await page.locator("dialog.confirm").get_by_role("button", name="Import").click()
    message = await notice(page)
    assert "422" in message
    assert "validation_error" in message
    assert (await api.get("/v1/users")).json()["items"] == []

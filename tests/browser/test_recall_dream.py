"""The recall playground shows an included and a skipped candidate with their reasons and components; a
dream proposal is approved and applied from the Dreaming view, and the report says what changed."""

from __future__ import annotations

from playwright.async_api import expect

from tests.browser.conftest import Tab
from tests.browser.pages import facts, notice, open_view, pick_user, sign_in
from tests.conftest import Api

TEA = "I prefer green tea in the afternoon"
SISTER = "My sister lives in Lisbon"
DEPLOY_TARGET = "The deploy target is Kubernetes on the staging cluster"
DEPLOY_WINDOW = "The deploy window is Tuesday night for the staging cluster"
COFFEE = "I drink coffee every morning"
COFFEE_AGAIN = "Every morning I drink coffee"


async def run_recall(tab: Tab, query: str, budget: int) -> None:
    page = tab.page
    await page.fill("input[name=query]", query)
    await page.fill("input[name=token_budget]", str(budget))
    await page.click("#view form button[type=submit]")
    await expect(page.locator("#view .recall-result .tokens-used")).to_contain_text(f"of {budget}")


async def test_recall_trace_shows_an_included_and_a_skipped_memory_with_reasons(tab: Tab, api: Api) -> None:
    await api.remember(user_id="u", content=TEA, type="preference")
    await api.remember(user_id="u", content=SISTER)
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await pick_user(page, "u")
    await open_view(page, "recall")
    await run_recall(tab, "what tea do I like?", 256)

    expected = await api.recall(user_id="u", query="what tea do I like?", token_budget=256)
    result = page.locator("#view .recall-result")
    await expect(result.locator("pre.context")).to_have_text(expected["context"])
    await expect(result.locator(".tokens-used")).to_have_text(f"{expected['tokens_used']} of 256")
    included = result.locator("tr.included")
    await expect(included).to_have_count(1)
    await expect(included).to_contain_text(TEA)
    await expect(included).to_contain_text("included #1")
    skipped = result.locator("tr.skipped")
    await expect(skipped).to_have_count(1)
    await expect(skipped).to_contain_text(SISTER)
    await expect(skipped.locator(".reason")).to_have_text("below_floor")
    await expect(skipped).to_contain_text("relevance under the minimum")
    for row in (included, skipped):  # both explain their score, component by component
        names = await row.locator(".components .name").all_inner_texts()
        assert {"semantic", "keyword", "recency", "importance", "type_prior"} <= set(names)


async def test_a_candidate_that_did_not_fit_the_budget_says_so(tab: Tab, api: Api) -> None:
    await api.remember(user_id="u", content=DEPLOY_TARGET)
    await api.remember(user_id="u", content=DEPLOY_WINDOW)
    wide = await api.recall(user_id="u", query="deploy staging cluster", token_budget=1024)
    one = await api.recall(user_id="u", query="deploy staging cluster", token_budget=wide["tokens_used"] - 1)
    budget = one["tokens_used"]  # room for the day's header and one line only
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await pick_user(page, "u")
    await open_view(page, "recall")
    await run_recall(tab, "deploy staging cluster", budget)

    result = page.locator("#view .recall-result")
    await expect(result.locator("tr.included")).to_have_count(1)
    skipped = result.locator("tr.skipped")
    await expect(skipped).to_have_count(1)
    await expect(skipped.locator(".reason")).to_have_text("budget")
    await expect(skipped).to_contain_text("did not fit in the tokens left")
    await expect(result.locator(".tokens-used")).to_have_text(f"{budget} of {budget}")


async def test_a_merge_proposal_is_approved_and_applied_from_the_ui(tab: Tab, api: Api) -> None:
    a = (await api.remember(user_id="u", content=COFFEE, type="preference", subject="coffee"))["memory"]
    b = (await api.remember(user_id="u", content=COFFEE_AGAIN, type="preference", subject="morning"))[
        "memory"
    ]
    page = tab.page
    await sign_in(page, tab.base, api.key)
    await pick_user(page, "u")
    await open_view(page, "dream")
    await expect(page.locator("#view .proposals")).to_contain_text("No proposals.")

    await page.get_by_role("button", name="Propose consolidations").click()
    assert "offline dreamer made 1 new proposal" in await notice(page)
    card = page.locator("article.proposal")
    await expect(card).to_have_count(1)
    await expect(card.locator(".badge-type")).to_have_text("merge")
    await expect(card.locator(".rationale")).to_contain_text("say the same")
    await expect(card.locator("ul.targets li")).to_have_count(2)
    await expect(card.locator("ul.targets")).to_contain_text(COFFEE)
    await expect(card.locator("ul.targets")).to_contain_text(COFFEE_AGAIN)
    assert (await api.memory(a["id"]))["status"] == "active"  # proposing changes nothing

    await card.get_by_role("button", name="Approve").click()
    await expect(card.locator(".badge-approved")).to_be_visible()
    await expect(card.get_by_role("button", name="Approve")).to_have_count(0)
    await page.get_by_role("button", name="Apply approved proposals").click()
    report = page.locator("#view .report")
    await expect(report).to_contain_text("Apply report")
    shown = await facts(report)
    assert (shown["applied"], shown["merged"], shown["stale"]) == ("1", "1", "0")
    await expect(card.locator(".badge-applied")).to_be_visible()

    assert (await api.memory(a["id"]))["status"] == "superseded"
    assert (await api.memory(b["id"]))["status"] == "superseded"
    live = (await api.get("/v1/memories", user_id="u", status="active")).json()["items"]
    [merged] = live
    assert merged["source"] == "dream"
    await report.get_by_role("link", name="new memory").click()
    await expect(page.locator("#view article.memory p.content")).to_have_text(merged["content"])

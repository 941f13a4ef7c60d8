"""The API docs render in headless Chromium with every request outside the service refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, Route, sync_playwright

from tests.support.browser import ARGS, BrowserMissing, chromium_path
from tests.support.database import TestDatabase
from tests.support.served import free_port, serve_env, serving, wait_ready


@pytest.fixture(scope="module")
def base_url(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("docs-server")
    port = free_port()
    env = serve_env(database, tmp, ENGRAM_EMBEDDER="hash")
    with serving(["--port", str(port), "--workers", "1"], env, tmp) as process:
        wait_ready(port, process)
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Debian's chromium here; CI on another distribution points CHROMIUM_PATH at the browser it installed.
    try:
        chromium = chromium_path()
    except BrowserMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(chromium), args=ARGS)
        yield b
        b.close()


def offline_page(browser: Browser, base_url: str) -> tuple[Page, list[str], list[str]]:
    """A page whose requests outside the service are refused (and recorded), with its console errors."""
    page = browser.new_page()
    refused: list[str] = []
    errors: list[str] = []

    def gate(route: Route) -> None:
        if route.request.url.startswith(base_url + "/"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", gate)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, refused, errors


@pytest.mark.parametrize("path", ["/schema", "/schema/swagger"])
def test_swagger_ui_renders_every_route_from_local_assets(browser: Browser, base_url: str, path: str) -> None:
    page, refused, errors = offline_page(browser, base_url)
    page.goto(base_url + path)
    page.wait_for_selector(".swagger-ui .info .title", timeout=30_000)
    assert "Engram" in page.inner_text(".swagger-ui .info .title")
    operations = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/v1/recall" in operations
    assert "/v1/memories/{memory_id}" in operations
    assert len(operations) >= 20
    assert refused == []
    assert errors == []
    page.close()


def test_an_operation_expands_with_its_request_body_schema(browser: Browser, base_url: str) -> None:
    page, refused, _ = offline_page(browser, base_url)
    page.goto(base_url + "/schema")
    page.wait_for_selector(".opblock-summary-path", timeout=30_000)
    page.locator(".opblock-post .opblock-summary", has_text="/v1/recall").first.click()
    page.wait_for_selector(".opblock-body .body-param__example, .opblock-body .model-example", timeout=10_000)
    assert "token_budget" in page.inner_text(".opblock.is-open")
    assert refused == []
    page.close()


def test_the_index_and_the_json_document_are_served(browser: Browser, base_url: str) -> None:
    page, refused, _ = offline_page(browser, base_url)
    index = page.goto(base_url + "/")
    assert index is not None
    assert index.json()["links"]["docs"] == "/schema"
    document = page.goto(base_url + "/schema/openapi.json")
    assert document is not None
    assert document.json()["info"]["title"] == "Engram"
    assert refused == []
    page.close()

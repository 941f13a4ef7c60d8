"""Screenshots of every inspector view for the README: `python -m tests.browser.screens [OUT_DIR]`.

Starts what the browser tests start (an embedded PostgreSQL, the app on a loopback port, Debian's chromium),
seeds the tour's data through the API and writes `inspector-<view>.png` (laptop size) and
`inspector-phone.png` (the memories view at a phone's width) to OUT_DIR (default docs/img).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import httpx
from playwright.async_api import async_playwright
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.db.session import create_engine
from app.main import create_app
from app.tenancy import admin
from tests.browser.conftest import LAPTOP
from tests.browser.pages import RequestLog, open_view, pick_user, sign_in
from tests.browser.tour import USER, seed, tour
from tests.conftest import Api
from tests.support.browser import launch
from tests.support.database import TestDatabase, test_database
from tests.support.live_server import LiveServer
from tests.support.settings import test_settings

PHONE = {"width": 390, "height": 844}


async def new_key(db: TestDatabase) -> tuple[str, str]:
    engine = create_engine(db.owner_url, pool_size=1, max_overflow=0)
    try:
        async with async_sessionmaker(engine)() as session, session.begin():
            created = await admin.create_tenant(session, "inspector-screens")
    finally:
        await engine.dispose()
    return str(created.tenant_id), created.plaintext


async def shoot(base: str, key: str, tenant_id: str, out: Path) -> list[Path]:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        await seed(Api(client, key, tenant_id))  # type: ignore[arg-type]  # the same calls over HTTP
    written = []
    async with async_playwright() as playwright:
        browser = await launch(playwright)
        context = await browser.new_context(viewport=LAPTOP, accept_downloads=True)
        requests = RequestLog(base)
        requests.attach(context)
        page = await context.new_page()
        async for view in tour(page, base, key):
            path = out / f"inspector-{view}.png"
            await page.screenshot(path=path, full_page=True)
            written.append(path)
        phone = await browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True)
        requests.attach(phone)
        small = await phone.new_page()
        await sign_in(small, base, key)
        await pick_user(small, USER)
        await open_view(small, "memories")
        path = out / "inspector-phone.png"
        await small.screenshot(path=path)
        written.append(path)
        await browser.close()
    if requests.foreign():
        raise RuntimeError(f"the page asked other hosts: {requests.foreign()}")
    return written


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img")
    out.mkdir(parents=True, exist_ok=True)
    with test_database() as db, tempfile.TemporaryDirectory() as data_dir:
        tenant_id, key = asyncio.run(new_key(db))
        settings = test_settings(db, Path(data_dir)).model_copy(update={"log_level": "warning"})
        with LiveServer(create_app(settings), name="engram-screens") as server:
            for path in asyncio.run(shoot(server.url, key, tenant_id, out)):
                print(path)


if __name__ == "__main__":
    main()

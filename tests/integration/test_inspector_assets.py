"""The inspector's files: served by the service at /inspector, locked to its origin, shipped in the package."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from litestar.testing import AsyncTestClient

STATIC = Path(__file__).resolve().parents[2] / "app" / "inspector" / "static"
IMPORT = re.compile(r"""^\s*import\s[^"']*["'](\./[^"']+|\.\./[^"']+)["'];""", re.MULTILINE)


async def test_the_page_is_served_at_inspector_with_and_without_a_slash(client: AsyncTestClient[Any]) -> None:
    for path in ("/inspector", "/inspector/"):
        response = await client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/html")
        assert '<script type="module" src="/inspector/js/main.js">' in response.text
        policy = response.headers["content-security-policy"]
        assert "default-src 'none'" in policy
        assert "connect-src 'self'" in policy
        assert response.headers["x-frame-options"] == "DENY"


async def test_every_module_the_page_imports_is_served_as_javascript(client: AsyncTestClient[Any]) -> None:
    """Follows the imports from main.js: a module that is missing or misnamed breaks the page."""
    pending, seen = ["/inspector/js/main.js"], set()
    while pending:
        url = pending.pop()
        if url in seen:
            continue
        seen.add(url)
        response = await client.get(url)
        assert response.status_code == 200, url
        assert response.headers["content-type"].startswith("text/javascript"), url
        base = url.rsplit("/", 1)[0]
        for target in IMPORT.findall(response.text):
            parts = (base + "/" + target).split("/")
            resolved: list[str] = []
            for part in parts:
                if part == "..":
                    resolved.pop()
                elif part != ".":
                    resolved.append(part)
            pending.append("/".join(resolved))
    on_disk = {f"/inspector/{p.relative_to(STATIC).as_posix()}" for p in STATIC.rglob("*.js")}
    assert seen == on_disk  # and no module lies unused
    css = await client.get("/inspector/inspector.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")


async def test_an_unknown_asset_is_a_404_in_the_error_shape(client: AsyncTestClient[Any]) -> None:
    for path in ("/inspector/nope.js", "/inspector/../app/main.py", "/inspector/%2e%2e/pyproject.toml"):
        response = await client.get(path)
        assert response.status_code == 404, path
        assert set(response.json()) == {"error", "detail"}


async def test_the_contracts_demo_path_leads_to_the_inspector(client: AsyncTestClient[Any]) -> None:
    response = await client.get("/demo", follow_redirects=False)
    assert response.status_code in (301, 302, 307, 308)
    assert response.headers["location"] == "/inspector/"


def test_every_static_file_is_package_data(repo_root: Path) -> None:
    """A non-editable install ships exactly what is declared; nothing under static/ may be left out."""
    config = tomllib.loads((repo_root / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["app.inspector"]
    package = repo_root / "app" / "inspector"
    declared = {p for pattern in patterns for p in package.glob(pattern)}
    present = {p for p in STATIC.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert present
    assert present <= declared, sorted(str(p) for p in present - declared)

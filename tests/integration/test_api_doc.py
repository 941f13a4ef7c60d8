"""docs/API.md, the project's contract, names every route the OpenAPI document lists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from litestar.testing import AsyncTestClient

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "API.md"


async def test_the_contract_names_every_route_the_service_serves(client: AsyncTestClient[Any]) -> None:
    paths = (await client.get("/schema/openapi.json")).json()["paths"]
    documented = API_DOC.read_text()
    headings = "\n".join(line for line in documented.splitlines() if line.startswith("### "))
    missing = []
    for path, operations in paths.items():
        for method in operations:
            if method.upper() not in {"GET", "POST", "PATCH", "DELETE", "PUT"}:
                continue
            # "/v1/memories/{memory_id}/pin" may be listed as "/pin" after its sibling's full path.
            leaf = "/" + path.rsplit("/", 1)[-1]
            named = f"`{method.upper()} {path}`" in headings or (
                re.search(rf"`{method.upper()} [^`]*`.*`{re.escape(leaf)}`", headings) is not None
            )
            if not named:
                missing.append(f"{method.upper()} {path}")
    assert missing == []
    assert "/schema/openapi.json" in documented

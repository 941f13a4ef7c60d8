"""docs/API.md, the project's contract, names every route the OpenAPI document lists; the document says
which operations need a key (the bearer scheme), so Swagger's "Authorize" sends it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from uuid import uuid4

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


METHODS = {"get", "post", "patch", "put", "delete"}


async def test_the_document_declares_the_bearer_scheme_on_exactly_the_operations_that_need_a_key(
    client: AsyncTestClient[Any],
) -> None:
    """Which operations need a key is asked of the service itself: called without one, they are a 401."""
    document = (await client.get("/schema/openapi.json")).json()
    schemes = document.get("components", {}).get("securitySchemes", {})
    bearer = {
        name
        for name, scheme in schemes.items()
        if (scheme.get("type"), scheme.get("scheme")) == ("http", "bearer")
    }
    assert bearer, schemes
    needs_key, public, wrong = [], [], []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            concrete = path
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path":
                    value = 1 if parameter["schema"].get("type") == "integer" else uuid4()
                    concrete = concrete.replace("{" + parameter["name"] + "}", str(value))
            status = (await client.request(method.upper(), concrete)).status_code
            # An operation without its own `security` inherits the document's.
            security = operation.get("security", document.get("security")) or []
            named = {name for requirement in security for name in requirement}
            if status == 401:
                needs_key.append(f"{method.upper()} {path}")
                if not named & bearer:
                    wrong.append(f"{method.upper()} {path}: needs a key, declares {security}")
            else:
                public.append(f"{method.upper()} {path}")
                if named:
                    wrong.append(f"{method.upper()} {path}: public ({status}), declares {security}")
    assert wrong == []
    assert all(" /v1/" in operation for operation in needs_key)
    assert len(needs_key) >= 40
    assert sorted(public) == ["GET /health", "GET /ready"]

"""The package's layers: a module imports its own layer or a lower one, never a higher one.

composition (main, cli, bootstrap) > api, state > agent | dream | portability | privacy > memory
> context > store > embeddings | usage | tenancy | language > db > lib | vocabulary | tenancy.types
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"

# Higher number: higher layer. The most specific prefix decides a module's layer.
LAYERS = {
    "app.main": 10,
    "app.cli": 10,
    "app.asgi": 10,
    "app.bootstrap": 10,
    "app.__main__": 10,
    "app.state": 9,  # the process's clients, which the API layer builds request contexts from
    "app.portability.cli": 10,
    "app.tenancy.cli": 10,
    "app.remote": 10,
    "app.serve": 10,
    "app.api": 9,
    "app.inspector": 9,
    "app.mcp.cli": 10,
    "app.mcp.stdio": 10,
    "app.mcp": 9,  # the MCP server beside the REST API: catalogue tools run through the same services
    "app.agent": 8,
    "app.dream": 8,
    "app.portability": 8,
    "app.privacy": 8,
    "app.webhooks": 8,
    "app.spaces": 8,
    "app.memory": 7,
    "app.context": 6,
    "app.store": 5,
    "app.embeddings": 4,
    "app.usage": 4,
    "app.tenancy": 4,
    "app.language": 4,
    "app.db": 3,
    "app.tenancy.types": 2,
    "app.lib": 2,
    "app.vocabulary": 2,
}
# Packages that must not import each other, whatever their layers.
APART = [("app.memory", "app.privacy")]


def layer(module: str) -> int:
    prefixes = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    assert prefixes, f"{module} has no layer: add it to LAYERS"
    return LAYERS[max(prefixes, key=len)]


def module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "app" and node.level == 0:
            found.update(f"app.{alias.name}" for alias in node.names)  # from app import remote
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m == "app" or m.startswith("app.")}


MODULES = sorted(APP.rglob("*.py"))


def violations(modules: list[tuple[str, set[str]]]) -> list[str]:
    found = []
    for name, imported in modules:
        for target in imported:
            if layer(target) > layer(name):
                found.append(f"{name} imports {target} (a higher layer)")
            for a, b in APART:
                if (name.startswith(a) and target.startswith(b)) or (
                    name.startswith(b) and target.startswith(a)
                ):
                    found.append(f"{name} imports {target} ({a} and {b} stay apart)")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(APP)))
def test_no_module_imports_a_higher_layer(path: Path) -> None:
    assert violations([(module_name(path), imports(path))]) == []


def test_the_check_sees_an_upward_import_and_the_memory_privacy_wall() -> None:
    assert violations([("app.store.reads", {"app.memory.service"})]) == [
        "app.store.reads imports app.memory.service (a higher layer)"
    ]
    assert violations([("app.memory.service", {"app.privacy.erase"})]) == [
        "app.memory.service imports app.privacy.erase (a higher layer)",
        "app.memory.service imports app.privacy.erase (app.memory and app.privacy stay apart)",
    ]
    assert violations([("app.privacy.erase", {"app.memory.slots"})]) == [
        "app.privacy.erase imports app.memory.slots (app.memory and app.privacy stay apart)"
    ]

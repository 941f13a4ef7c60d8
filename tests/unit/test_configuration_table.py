"""The README's configuration table names every setting Engram reads, and nothing it does not."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import AliasChoices

from app.lib.settings import ScoringWeights, Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def environment_names() -> set[str]:
    """The variable each setting is read from (its first alias, else the ENGRAM_ name)."""
    names: set[str] = set()
    for field_name, field in Settings.model_fields.items():
        if field_name == "weights":
            continue  # nested: its own fields below
        alias = field.validation_alias
        names.add(alias.choices[0] if isinstance(alias, AliasChoices) else f"ENGRAM_{field_name.upper()}")
    names |= {f"ENGRAM_WEIGHT_{name.upper()}" for name in ScoringWeights.model_fields}
    return names


def documented_names() -> set[str]:
    text = README.read_text()
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split(" | ")[0])}


def test_every_setting_is_in_the_readme_configuration_table() -> None:
    missing = environment_names() - documented_names()
    assert not missing, f"settings missing from the README's table: {sorted(missing)}"


def test_the_table_names_no_setting_that_does_not_exist() -> None:
    unknown = documented_names() - environment_names()
    assert not unknown, f"the README's table names unknown variables: {sorted(unknown)}"

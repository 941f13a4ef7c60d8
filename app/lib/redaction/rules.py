"""The machinery every redaction layer shares: a rule (a compiled pattern and a classifier), the typed
placeholder ``[REDACTED:<kind>]`` and the loop that applies a rule to text.

A rule's match replaces either the named secret group that took part in it (so ``password=`` and
``user:...@host`` keep their key, user and host) or, when none did, the whole match. A classifier returns
the kind, or None to leave that match untouched; it is where a pattern's second opinion lives (a Luhn
check, the shape of a value, a word before it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MARKER_PREFIX = "[REDACTED:"
MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
# A replaced span is the first of these named groups that took part in the match, else the whole match.
SECRET_GROUPS = ("secret", "secret_dq", "secret_sq")
# Values that are placeholders rather than secrets (``password: null`` in a config dump).
PLACEHOLDERS = frozenset({"null", "none", "nil", "true", "false", "undefined", "''", '""'})

Classifier = Callable[[re.Match[str]], str | None]


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern of a layer and the classifier that judges its matches."""

    pattern: re.Pattern[str]
    classify: Classifier
    # Lowercase literals one of which every match contains: a text holding none is skipped without
    # running the pattern (a substring test is far cheaper than a scan that starts with a look-behind).
    needles: tuple[str, ...] = ()


def always(kind: str) -> Classifier:
    """A classifier that accepts every match as ``kind``."""
    return lambda _match: kind


def rule(pattern: str, kind: str | Classifier, needles: tuple[str, ...] = ()) -> Rule:
    """Compile ``pattern`` into a rule whose kind is fixed (a string) or decided per match."""
    classify = always(kind) if isinstance(kind, str) else kind
    return Rule(re.compile(pattern), classify, tuple(n.lower() for n in needles))


def secret_span(match: re.Match[str]) -> tuple[int, int]:
    groups = match.re.groupindex
    for name in SECRET_GROUPS:
        if name in groups and match.start(name) != -1:
            return match.span(name)
    return match.span()


def apply(rule: Rule, text: str, found: list[str]) -> str:
    """Apply one rule to ``text``, appending each kind it replaced to ``found``. The needle test is the
    caller's (`redact` makes it once for every rule)."""

    def replace(match: re.Match[str]) -> str:
        kind = rule.classify(match)
        if kind is None:
            return match.group(0)
        start, end = secret_span(match)
        if start == end:
            return match.group(0)
        found.append(kind)
        whole = match.group(0)
        offset = match.start()
        return f"{whole[: start - offset]}{MARKER_PREFIX}{kind}]{whole[end - offset :]}"

    return rule.pattern.sub(replace, text)

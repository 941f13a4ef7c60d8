"""Secret redaction: the single gate text passes before it is stored, logged, embedded or exported.

Every secret is replaced with ``[REDACTED:<kind>]``. Three layers run in order, so the most specific
kind wins and a later layer skips the markers an earlier one left:

1. ``providers``: formats with a shape of their own (private key blocks, ``AKIA...``, ``ghp_...``,
   ``glpat-...``, JWTs, URL credentials, bearer and basic headers, card numbers...).
2. ``phrases``: a value named by the words before it, as an assignment (``password=...``,
   ``"api_key": "..."``) or in prose (``my password is ...``, ``the api key for X is ...``).
3. ``entropy``: a random-looking token with a credential word shortly before it.

docs/SECURITY.md lists what each layer catches and how the corpora in the tests hold it to that.
All patterns are compiled at import and run in time linear in the text (see each layer's notes).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

from app.lib.redaction import entropy, phrases, providers
from app.lib.redaction.rules import MARKER_PREFIX, PLACEHOLDERS, Rule, apply

__all__ = ["LAYERS", "Redacted", "contains_secret", "redact", "redact_processor", "redact_value"]

LAYERS: tuple[tuple[str, tuple[Rule, ...]], ...] = (
    ("providers", providers.RULES),
    ("phrases", phrases.RULES),
    ("entropy", entropy.RULES),
)
# Every rule, in layer order, and for each needle the positions of the rules it admits: one pass of
# substring tests over the text picks the rules that can match it (most text, and every log field,
# holds none of the needles, so most patterns never run and are not even looked at).
_RULES: tuple[Rule, ...] = tuple(rule for _name, rules in LAYERS for rule in rules)
_ALWAYS = frozenset(i for i, rule in enumerate(_RULES) if not rule.needles)
_BY_NEEDLE: dict[str, tuple[int, ...]] = {}
for _i, _rule in enumerate(_RULES):
    for _needle in _rule.needles:
        _BY_NEEDLE[_needle] = (*_BY_NEEDLE.get(_needle, ()), _i)


def _rules_for(lowered: str) -> list[Rule]:
    """The rules, in order, that can match a text whose lowercase form is `lowered`."""
    wanted = set(_ALWAYS)
    for needle, positions in _BY_NEEDLE.items():
        if needle in lowered:
            wanted.update(positions)
    return [_RULES[i] for i in sorted(wanted)]


@dataclass(frozen=True, slots=True)
class Redacted:
    """Result of :func:`redact`: the cleaned text and the kinds found, unique, in rule order."""

    text: str
    kinds: tuple[str, ...]

    @property
    def changed(self) -> bool:
        """True when at least one secret was replaced (every replacement records its kind)."""
        return bool(self.kinds)


def redact(text: str) -> Redacted:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``.

    Assignments (``password=...``) and URL credentials keep their key / user / host and lose only the
    value. The result is idempotent: redacting already-redacted text changes nothing.
    """
    found: list[str] = []
    # Replacements only insert markers, which no rule matches, so the original's needles stay valid.
    for rule in _rules_for(text.lower()):
        text = apply(rule, text, found)
    return Redacted(text=text, kinds=tuple(dict.fromkeys(found)))


def contains_secret(text: str) -> bool:
    """Return True when :func:`redact` would change ``text``."""
    return redact(text).changed


def _redact_nested(value: object, key: object) -> object:
    if isinstance(value, str):
        result = redact(value)
        if result.changed:
            return result.text
        # A bare value under a sensitive key ({"password": "hunter2"}, log.info(..., token=t)) has no
        # shape to recognise, so the key name is the only signal that it must not be kept.
        if (
            isinstance(key, str)
            and phrases.SENSITIVE_KEY.search(key)
            and value.strip()
            and value.strip().lower() not in PLACEHOLDERS
            and MARKER_PREFIX not in value
        ):
            return f"{MARKER_PREFIX}{phrases.assignment_kind(key)}]"
        return value
    if isinstance(value, dict):
        return {k: _redact_nested(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_nested(item, key) for item in value]
    if isinstance(value, tuple):
        return tuple(_redact_nested(item, key) for item in value)
    return value


def redact_value(value: object) -> object:
    """Return a copy of ``value`` with every string redacted, recursing into dicts, lists and tuples.

    Dict keys are kept as they are. A plain string stored under a sensitive key name (``password``,
    ``api_key``, ``access_token``, ...) is replaced outright even if it has no recognisable shape.
    Other types are returned unchanged.
    """
    return _redact_nested(value, None)


def redact_processor(
    logger: object, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: redact every string value of the event dict (recursively), in place.

    Place it after ``format_exc_info`` so rendered tracebacks are redacted too, and before the renderer.
    """
    for key in list(event_dict):
        event_dict[key] = _redact_nested(event_dict[key], key)
    return event_dict

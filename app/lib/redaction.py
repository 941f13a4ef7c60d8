"""Secret redaction: the single gate text passes before it is stored, logged, embedded or exported.

Every secret is replaced with ``[REDACTED:<kind>]``. Rules run in a fixed order: PEM private key blocks
first (they contain base64 that would otherwise be chewed up piecemeal), then vendor formats with a
recognisable shape, then URL credentials, bearer tokens and card numbers, and finally the generic
``key=value`` assignments, so the most specific kind wins and later rules skip existing markers.

All patterns are compiled at import and are written to run in linear time: every repeated run is
anchored by a literal prefix or a look-behind that stops a run being re-scanned from each of its
characters, and no quantified group can match the same text in more than one way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Redacted", "contains_secret", "redact", "redact_processor", "redact_value"]

_MARKER_PREFIX = "[REDACTED:"
# Values that are placeholders rather than secrets (``password: null`` in a config dump).
_PLACEHOLDERS = frozenset({"null", "none", "nil", "true", "false", "undefined"})
_DB_SCHEMES = frozenset(
    {"postgres", "postgresql", "mysql", "mariadb", "mongodb", "redis", "rediss", "amqp", "amqps", "mssql"}
)
# A replaced span is either the named group below that took part in the match or the whole match.
_SECRET_GROUPS = ("secret", "secret_dq", "secret_sq")
_WORDY_SEGMENT = re.compile(r"[a-z]+[0-9]{0,3}|[0-9]{1,4}")

Classifier = Callable[[re.Match[str]], str | None]


@dataclass(frozen=True, slots=True)
class Redacted:
    """Result of :func:`redact`: the cleaned text and the kinds found, unique, in rule order."""

    text: str
    kinds: tuple[str, ...]

    @property
    def changed(self) -> bool:
        """True when at least one secret was replaced (every replacement records its kind)."""
        return bool(self.kinds)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    classify: Classifier  # returns the kind, or None to leave this match untouched


def _always(kind: str) -> Classifier:
    return lambda _match: kind


def _luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _classify_sk(match: re.Match[str]) -> str | None:
    body = match.group("body")
    # "sk-" followed by hyphenated prose ("sk-learn-compatible-...") must survive. Random key material
    # always has a segment mixing case or letters and digits; prose is lowercase words and small numbers.
    if all(_WORDY_SEGMENT.fullmatch(segment) for segment in re.split(r"[-_]", body) if segment):
        return None
    if re.fullmatch(r"[0-9a-f]{32}", body):
        return "dashscope_key"  # Alibaba DashScope keys are sk- + 32 lowercase hex
    return "openai_key"


def _classify_card(match: re.Match[str]) -> str | None:
    digits = re.sub(r"[ -]", "", match.group(0))
    return "credit_card" if 13 <= len(digits) <= 19 and _luhn_valid(digits) else None


def _classify_url(match: re.Match[str]) -> str | None:
    base = match.group("scheme").lower().split("+", 1)[0]  # postgresql+asyncpg, mongodb+srv
    return "database_url_password" if base in _DB_SCHEMES else "url_password"


def _assignment_kind(key: str) -> str:
    lowered = key.lower()
    if "pass" in lowered or "pwd" in lowered:
        return "password_assignment"
    if "token" in lowered:
        return "token_assignment"
    if "api" in lowered:
        return "api_key_assignment"
    return "secret_assignment"


def _classify_assignment(match: re.Match[str]) -> str | None:
    value = match.group("secret") or match.group("secret_dq") or match.group("secret_sq") or ""
    if value.lower() in _PLACEHOLDERS:
        return None
    return _assignment_kind(match.group("key"))


# Key names whose value is a secret. The keyword must END the identifier, so "max_tokens",
# "token_budget", "password_policy" and "tokenizer" are not sensitive while "DB_PASSWORD",
# "x-api-key", "clientSecret" and "access_token" are.
_KEYWORDS = (
    r"passw(?:or)?d|passphrase|pwd|secret|token|api[_-]?key|secret[_-]?key|private[_-]?key|access[_-]?key"
)
_SENSITIVE_KEY = re.compile(rf"(?i:{_KEYWORDS})\Z")
_SEPARATOR = r"[\"']?[ \t]*(?::=|=>|[:=])[ \t]*"

_RULES: tuple[_Rule, ...] = (
    # PEM/OpenSSH/PGP blocks, multi-line. The body is an unrolled possessive loop that stops at the
    # first "-----"; a missing END (truncated paste) still redacts everything up to that point.
    _Rule(
        re.compile(
            r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
            r"[^-]*+(?:-(?!----)[^-]*+)*+"
            r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
        ),
        _always("private_key"),
    ),
    # Engram's own API keys: egm_<8 hex public prefix>_<secret>. The prefix alone (in key listings and
    # `engram key revoke egm_1a2b3c4d`) is public and survives.
    _Rule(
        re.compile(r"(?<![A-Za-z0-9_])egm_[0-9a-f]{8}_[A-Za-z0-9_-]{20,}"),
        _always("engram_api_key"),
    ),
    _Rule(re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}"), _always("anthropic_key")),
    _Rule(re.compile(r"(?<![A-Za-z0-9_-])sk-(?P<body>[A-Za-z0-9_-]{20,})"), _classify_sk),
    _Rule(
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"), _always("aws_access_key_id")
    ),
    # 40-char AWS secrets are indistinguishable from other base64, so they need the key name nearby.
    _Rule(
        re.compile(
            r"(?i:aws[_-]?secret(?:[_-]?access)?[_-]?key|secret[_-]?access[_-]?key)"
            + _SEPARATOR
            + r"[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        _always("aws_secret_key"),
    ),
    _Rule(
        re.compile(r"(?<![A-Za-z0-9])LTAI[A-Za-z0-9]{12,30}(?![A-Za-z0-9])"), _always("alibaba_access_key_id")
    ),
    _Rule(
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
        _always("github_token"),
    ),
    _Rule(re.compile(r"(?<![A-Za-z0-9-])(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}"), _always("slack_token")),
    _Rule(
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/-]+)"),
        _always("slack_webhook"),
    ),
    _Rule(
        re.compile(
            r"(?<![A-Za-z0-9_])(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,})"
        ),
        _always("stripe_key"),
    ),
    _Rule(re.compile(r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}"), _always("google_api_key")),
    _Rule(re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"), _always("huggingface_token")),
    _Rule(re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36,}"), _always("npm_token")),
    _Rule(
        re.compile(r"(?<![A-Za-z0-9_.-])SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), _always("sendgrid_key")
    ),
    _Rule(re.compile(r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])"), _always("twilio_api_key")),
    # Header and payload are base64url JSON, so the first segment always starts with '{"' == "eyJ".
    _Rule(
        re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
        _always("jwt"),
    ),
    # scheme://user:password@host -> only the password goes; "@" inside an unencoded password is
    # handled by the greedy run backing off to the last "@" before the path.
    _Rule(
        re.compile(
            r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{1,30})://[^:@/\s]{0,256}:"
            r"(?!\[REDACTED:)(?P<secret>[^\s/]+)@"
        ),
        _classify_url,
    ),
    _Rule(re.compile(r"(?i:\bbearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)"), _always("bearer_token")),
    _Rule(
        re.compile(
            r"(?i:authorization)[\"']?[ \t]*:[ \t]*[\"']?(?i:basic)[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}=*)"
        ),
        _always("basic_auth"),
    ),
    # Cards: contiguous or in 4-x-x(-x) groups with one consistent separator. The leading digit must be
    # 2-6 (every major network), which keeps epoch-millisecond timestamps (1...) and most ids out.
    _Rule(
        re.compile(
            r"(?<![0-9A-Za-z_.-])"
            r"(?:[2-6][0-9]{12,18}"
            r"|[2-6][0-9]{3}(?P<sep>[ -])[0-9]{4,6}(?P=sep)[0-9]{4,5}(?:(?P=sep)[0-9]{1,4}){0,2})"
            r"(?![0-9A-Za-z_]|[.-][0-9])"
        ),
        _classify_card,
    ),
    # Generic assignments, last, so a vendor marker already in the value is left alone.
    _Rule(
        re.compile(
            rf"(?i:(?P<key>{_KEYWORDS}))(?![A-Za-z0-9_]){_SEPARATOR}"
            r"(?:\"(?!\[REDACTED:)(?P<secret_dq>(?:[^\"\\\n]|\\.)+)\""
            r"|'(?!\[REDACTED:)(?P<secret_sq>(?:[^'\\\n]|\\.)+)'"
            # An unterminated quote (truncated log line) falls through to the bare form.
            r"|[\"']?(?!\[REDACTED:)(?P<secret>[^\s'\",;&]+))"
        ),
        _classify_assignment,
    ),
)


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    groups = match.re.groupindex
    for name in _SECRET_GROUPS:
        if name in groups and match.start(name) != -1:
            return match.span(name)
    return match.span()


def _apply(rule: _Rule, text: str, found: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        kind = rule.classify(match)
        if kind is None:
            return match.group(0)
        found.append(kind)
        start, end = _secret_span(match)
        whole = match.group(0)
        offset = match.start()
        return f"{whole[: start - offset]}{_MARKER_PREFIX}{kind}]{whole[end - offset :]}"

    return rule.pattern.sub(replace, text)


def redact(text: str) -> Redacted:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``.

    Assignments (``password=...``) and URL credentials keep their key / user / host and lose only the
    value. The result is idempotent: redacting already-redacted text changes nothing.
    """
    found: list[str] = []
    for rule in _RULES:
        text = _apply(rule, text, found)
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
            and _SENSITIVE_KEY.search(key)
            and value.strip()
            and value.strip().lower() not in _PLACEHOLDERS
            and _MARKER_PREFIX not in value
        ):
            return f"{_MARKER_PREFIX}{_assignment_kind(key)}]"
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

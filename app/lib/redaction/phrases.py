"""Layer 2: a secret named by the words around it rather than by its own shape.

Two shapes. Assignments (``password=x``, ``"api_key": "x"``, ``DB_PASS: x``, ``Authorization: Token x``)
take any value but a placeholder (``null``, ``true``...); a key repeated before its value
(``password: password: x``, which the chat agent writes when it restates a line) is skipped so the
value itself goes. Prose (``my password is x``, ``the api key for staging is x``, ``deploy token is
<hex>``, ``passwd x``) takes a value only when it is shaped like one: a quoted string, or a word with a
digit, a symbol or a case change inside, or four or more digits. "my token is expired" and "the
password is in the vault" are sentences, not secrets.

Key names must END the identifier, so "max_tokens", "token_budget", "password_policy" and "tokenizer"
are not sensitive while "DB_PASSWORD", "x-api-key", "clientSecret" and "access_token" are; the short
keys ``pw`` and ``pass`` must also START one, so "bypass" and "compass" are words.
"""

from __future__ import annotations

import re

from app.lib.redaction.rules import MARKER_PREFIX, PLACEHOLDERS, Rule, rule

_KEYWORDS = (
    r"passw(?:or)?d|passphrase|passcode|pwd|secret|token|api[_-]?key|secret[_-]?key|private[_-]?key"
    r"|access[_-]?key|(?<![A-Za-z0-9])(?:pw|pass)"
)
SENSITIVE_KEY = re.compile(rf"(?i:{_KEYWORDS})\Z")
_SEPARATOR = r"[\"']?[ \t]*(?::=|=>|[:=])[ \t]*"
_KEY = rf"(?i:(?P<key>{_KEYWORDS}))(?![A-Za-z0-9_])"
# The same key (any identifier ending in a sensitive word) written again before the value.
_REPEATED_KEY = rf"(?:[\"']?[A-Za-z0-9_-]{{0,40}}(?i:{_KEYWORDS})(?![A-Za-z0-9_]){_SEPARATOR})*+"

_NOUN = (
    r"pass(?:word|wd|code|phrase)|pw|pwd|pin(?:[ ]code)?|secret(?:[ _-]key)?|client[ _-]secret"
    r"|(?:app|wifi|wi-fi|admin|root|master)[ _-]password|(?:api|access|private|secret|license|ssh)[ _-]?key"
    r"|(?:(?:access|auth|api|bearer|bot|deploy|personal[ ]access|refresh|session|github|gitlab|slack"
    r"|discord|ci|npm|pypi|vault|webhook|service)[ _-]?)?token"
)
# "for the staging server", "to my bank", "of the bot": up to four words between noun and verb.
_QUALIFIER = r"(?:[ \t]+(?i:for|to|of|on|at|in)(?:[ \t]+[^\s:=\"'\[\]]{1,40}){1,4}?)?"
_VERB = (
    r"(?:[ \t]*[:=][ \t]*"
    r"|[ \t]*['\u2019]s[ \t]+"
    # "was changed to" before "was": a rejected value does not send the match back to try another verb.
    r"|[ \t]+(?i:(?:(?:is|was|has[ ]been|have[ ]been|got|been)[ \t]+)?(?:changed|set|updated|reset)[ \t]+to"
    r"|(?:is|was|are|will[ ]be|should[ ]be|would[ ]be|became|becomes)"
    r"(?:[ \t]+(?:now|still|just|actually|literally))?[ \t]*:?)[ \t]+)"
)
_VALUE = (
    r"(?:\"(?!\[REDACTED:)(?P<secret_dq>[^\"\n]{1,200})\""
    r"|'(?!\[REDACTED:)(?P<secret_sq>[^'\n]{1,200})'"
    r"|(?!\[REDACTED:)(?P<secret>[^\s'\"`<>]*[^\s'\"`<>.,;:!?)]))"
)
_SYMBOL = re.compile(r"[!@#$%^&*+=~|\\/{}\[\]]")
_CASE_CHANGE = re.compile(r"[a-z][A-Z]")


def _kind(key: str) -> str:
    lowered = key.lower()
    if "pass" in lowered or "pwd" in lowered or lowered.startswith(("pw", "pin")):
        return "password_assignment"
    if "token" in lowered:
        return "token_assignment"
    if "api" in lowered:
        return "api_key_assignment"
    return "secret_assignment"


def assignment_kind(key: str) -> str:
    """The placeholder kind for a value stored under ``key`` (``DB_PASSWORD`` -> password_assignment)."""
    return _kind(key)


def _value(match: re.Match[str]) -> str:
    return match.group("secret") or match.group("secret_dq") or match.group("secret_sq") or ""


# Code and templates that name a secret without holding it: `password = request.form['password']`,
# `apiKey = process.env.API_KEY`, `token: ${{ secrets.GITHUB_TOKEN }}`, `Password: <input ...>`.
_CALL_OR_INDEX = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*[(\[]")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+\)*")
_TEMPLATE = re.compile(r"[<{(]|\$[({]|%[(s]")
# A value spelled from the key's own words with no digit ("YOUR_API_KEY", "testpassword", "some_token",
# "hashed_password)") is a placeholder or a variable, not a secret; "password123" is not of that kind.
_SELF_NAMED = re.compile(r"[A-Za-z_-]*(?:pass|pwd|token|secret|key)[A-Za-z_-]*\)*", re.IGNORECASE)


def names_a_secret(value: str, code: bool = True) -> bool:
    """True when ``value`` refers to a secret instead of being one: a placeholder or variable named
    after it, a template, markup, or (``code``: unquoted values only) a call, index or attribute path."""
    if not any(c.isalnum() for c in value) or _SELF_NAMED.fullmatch(value):
        return True
    if _TEMPLATE.match(value):
        return True
    return code and bool(_CALL_OR_INDEX.match(value) or _DOTTED.fullmatch(value))


def _classify_assignment(match: re.Match[str]) -> str | None:
    value = _value(match)
    # The value is optional in the pattern so that a run of bare keys is consumed in one match
    # (linear) instead of being rescanned from each key; a match without one replaces nothing.
    bare = match.group("secret") is not None
    # A one-character string literal ("a" in `password = "a" * 1000`) is a test's filler.
    if (not bare and len(value) < 2) or names_a_secret(value, code=bare):
        return None
    if value.lower() in PLACEHOLDERS or value.startswith(MARKER_PREFIX):
        return None
    return _kind(match.group("key"))


def secret_shaped(value: str) -> bool:
    """A bare word that reads as a credential, not as English: digits with letters, a symbol, a case
    change inside, or a run of four or more digits (a PIN)."""
    if len(value) < 4 or value.lower() in PLACEHOLDERS or MARKER_PREFIX in value or names_a_secret(value):
        return False
    if value.isdigit():
        return True
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    if has_digit and has_alpha:
        # Ordinals, times and sizes ("2nd", "10am", "16GB") read as prose, not as a password.
        return not re.fullmatch(r"[0-9]+(?:st|nd|rd|th|am|pm|h|m|s|k|kb|mb|gb|tb|px|x|%)", value, re.I)
    return bool(_SYMBOL.search(value) or _CASE_CHANGE.search(value[1:]))


def _classify_prose(match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    quoted = groups.get("secret_dq") or groups.get("secret_sq")
    if quoted is not None:
        words = quoted.split()
        ok = 0 < len(words) <= 4 and len(quoted) > 1 and quoted.strip().lower() not in PLACEHOLDERS
        ok = ok and MARKER_PREFIX not in quoted and not names_a_secret(quoted, code=False)
        return _kind(match.group("noun")) if ok else None
    return _kind(match.group("noun")) if secret_shaped(match.group("secret")) else None


RULES: tuple[Rule, ...] = (
    # An Authorization header with a scheme other than Bearer/Basic (those are layer 1's): Token, Bot,
    # ApiKey, SSWS... or with no scheme at all.
    rule(
        r"(?i:\b(?:proxy-)?authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"(?:(?i:token|bot|apikey|api-key|key|ssws|sso-key|hmac|otp|digest|negotiate|ntlm)[ \t]+"
        r"|(?!(?i:bearer|basic)\b))"
        r"(?!\[REDACTED:)(?P<secret>[A-Za-z0-9._~+/=:-]{8,})",
        "authorization_header",
        needles=("authorization",),
    ),
    # Assignments; the repeated keys are possessive and the value optional, so a run of keys is one match.
    rule(
        _KEY + _SEPARATOR + _REPEATED_KEY + r"(?:\"(?!\[REDACTED:)(?P<secret_dq>(?:[^\"\\\n]|\\.)+)\""
        r"|'(?!\[REDACTED:)(?P<secret_sq>(?:[^'\\\n]|\\.)+)'"
        # An unterminated quote (truncated log line) falls through to the bare form.
        r"|[\"']?(?!\[REDACTED:)(?P<secret>[^\s'\",;&]+))?",
        _classify_assignment,
        needles=("pass", "pw", "secret", "token", "key"),
    ),
    # Prose: "<noun> [for X] <verb> <value>".
    rule(
        rf"(?<![A-Za-z0-9_-])(?i:(?P<noun>{_NOUN}))(?![A-Za-z0-9_]){_QUALIFIER}{_VERB}{_VALUE}",
        _classify_prose,
        needles=("pass", "pw", "pin", "secret", "key", "token"),
    ),
    # "passwd hunter2", "pw hunter2": the command-line shape, no verb.
    rule(
        r"(?<![A-Za-z0-9_-])(?i:(?P<noun>passwd|pw))[ \t]+"
        r"(?!\[REDACTED:)(?P<secret>[^\s'\"`<>]*[^\s'\"`<>.,;:!?)])",
        _classify_prose,
        needles=("passwd", "pw"),
    ),
)

"""Tests for app.lib.redaction: the corpora (tests/support/redaction_corpus.py) case by case, the shape
of what is kept, nested values and log events, and inputs built to make a regex backtrack.

Every "secret" is generated from a seeded random source at import time, so no string here or in the
corpus is a usable credential (and secret scanners have nothing real to flag).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import structlog

from app.lib.redaction import (
    Redacted,
    contains_secret,
    redact,
    redact_processor,
    redact_value,
)
from app.lib.redaction.providers import luhn_valid as _luhn_valid
from tests.support.redaction_corpus import AWS_SECRET, LOOKALIKES, SECRETS, Case, pem, render


def _surrounding_words(case: Case) -> list[str]:
    """The sentence's words that share nothing with the secret (the "{}" slot, or the secret written in)."""
    pieces = case.secret.split()
    words = case.sentence.split()
    return [w for w in words if "{}" not in w and not any(p in w or w in p for p in pieces)]


@pytest.mark.parametrize("case", list(SECRETS.values()), ids=list(SECRETS))
def test_secret_is_redacted(case: Case) -> None:
    text = render(case)
    assert case.secret in text  # guard: the fixture really embeds the secret
    result = redact(text)
    assert case.secret not in result.text
    assert f"[REDACTED:{case.kind}]" in result.text
    assert case.kind in result.kinds
    assert result.changed is True
    for word in _surrounding_words(case):
        # Words that shared a token with the secret (e.g. "password=hunter2") are checked by the
        # key-preservation tests; the free-standing ones must survive verbatim.
        assert word in result.text, word


@pytest.mark.parametrize("text", list(LOOKALIKES.values()), ids=list(LOOKALIKES))
def test_harmless_text_is_unchanged(text: str) -> None:
    result = redact(text)
    assert result.text == text
    assert result.changed is False
    assert result.kinds == ()
    assert contains_secret(text) is False


def test_corpus_sizes() -> None:
    assert len(SECRETS) >= 120
    assert len(LOOKALIKES) >= 90
    assert len({case.kind for case in SECRETS.values()}) >= 60


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password: password: x9", "password: password: [REDACTED:password_assignment]"),
        ("password: password: plain", "password: password: [REDACTED:password_assignment]"),
        ("Password: password=plain", "Password: password=[REDACTED:password_assignment]"),
        ('"password": "password: plain"', '"password": "password: [REDACTED:password_assignment]"'),
        ("token: token: token: abc", "token: token: token: [REDACTED:token_assignment]"),
        ("api_key = API_KEY = abc", "api_key = API_KEY = [REDACTED:api_key_assignment]"),
        ("password: password: password1", "password: password: [REDACTED:password_assignment]"),
    ],
)
def test_a_repeated_key_still_loses_its_value(text: str, expected: str) -> None:
    # The chat agent restates "password: x" as "password: password: x"; the value must go, not the key.
    result = redact(text)
    assert result.text == expected
    assert result.changed is True


@pytest.mark.parametrize(
    ("text", "changed"),
    [
        ("my password is Tr0ub4dor&3", True),
        ("my password is hunter2", True),
        ("my password is 'sunshine'", True),
        ("my password is 48213", True),
        ("my password is sunshine", False),  # a bare English word reads as prose (see phrases.py)
        ("my password is expired", False),
        ("my password is 8 characters", False),
        ("the password is on the 2nd page", False),
        ("the token for the staging server is q8Zk2LmN", True),
        ("the token for the staging server is ready", False),
    ],
)
def test_prose_values_must_look_like_secrets(text: str, changed: bool) -> None:
    assert redact(text).changed is changed


@pytest.mark.parametrize(
    ("text", "changed"),
    [
        ("the relay key, as agreed, is Zx81Qw5RtY7uI9oP", True),
        ("the relay password (new one) -> Zx81Qw5RtY7uI9oP", True),
        ("relay build Zx81Qw5RtY7uI9oP shipped", False),  # no credential word
        ("the relay key id, as agreed, is Zx81Qw5RtY7uI9oP", False),  # an id, named as one
        ("the relay key, as agreed, is aaaaaaaaaaaaaaaa1", False),  # not random
        ("the relay key, as agreed, is TokenRefreshService2", False),  # an identifier
        ("the relay key is\nZx81Qw5RtY7uI9oP", False),  # another line
    ],
)
def test_entropy_layer_needs_credential_context_and_randomness(text: str, changed: bool) -> None:
    assert redact(text).changed is changed


@pytest.mark.parametrize("case", list(SECRETS.values()), ids=list(SECRETS))
def test_redaction_is_idempotent(case: Case) -> None:
    once = redact(render(case))
    twice = redact(once.text)
    assert twice.text == once.text
    assert twice.changed is False  # existing markers are never re-redacted


def test_all_secrets_in_one_document() -> None:
    document = "\n".join(render(case) for case in SECRETS.values())
    result = redact(document)
    for case in SECRETS.values():
        assert case.secret not in result.text
    assert set(result.kinds) == {case.kind for case in SECRETS.values()}
    assert len(result.kinds) == len(set(result.kinds))
    assert redact(result.text).text == result.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2", "password=[REDACTED:password_assignment]"),
        ("PASSWORD = hunter2", "PASSWORD = [REDACTED:password_assignment]"),
        ('api_key = "abc"', 'api_key = "[REDACTED:api_key_assignment]"'),
        ("token: abcdef", "token: [REDACTED:token_assignment]"),
        ("secret: xyz", "secret: [REDACTED:secret_assignment]"),
        ("clientSecret: xyz", "clientSecret: [REDACTED:secret_assignment]"),
        ("{'pwd': 'a b'}", "{'pwd': '[REDACTED:password_assignment]'}"),
        ("a=1&access_token=zz&b=2", "a=1&access_token=[REDACTED:token_assignment]&b=2"),
        ('password="unterminated', 'password="[REDACTED:password_assignment]'),
        ("api_key=sk-" + "A1b2" * 6, "api_key=[REDACTED:openai_key]"),
        (
            "postgresql://user:pass@host/db",
            "postgresql://user:[REDACTED:database_url_password]@host/db",
        ),
        (
            "Authorization: Bearer " + "x" * 20,
            "Authorization: Bearer [REDACTED:bearer_token]",
        ),
        (
            "aws_secret_access_key=" + AWS_SECRET,
            "aws_secret_access_key=[REDACTED:aws_secret_key]",
        ),
    ],
)
def test_key_names_are_preserved(text: str, expected: str) -> None:
    assert redact(text).text == expected


@pytest.mark.parametrize(
    "number",
    ["4111111111111111", "5555555555554444", "378282246310005", "6011111111111117", "4222222222222"],
)
def test_luhn_valid_numbers(number: str) -> None:
    assert _luhn_valid(number) is True
    assert redact(f"card {number} ok").text == "card [REDACTED:credit_card] ok"


@pytest.mark.parametrize(
    "number",
    ["4111111111111112", "5555555555554445", "378282246310006", "1234567812345678", "4222222222223"],
)
def test_luhn_invalid_numbers(number: str) -> None:
    assert _luhn_valid(number) is False
    assert redact(f"card {number} ok").changed is False


def test_card_number_inside_longer_digit_run_is_not_a_card() -> None:
    text = "id 94111111111111111 and 41111111111111110000"
    assert redact(text).text == text


def test_private_key_block_keeps_text_around_it() -> None:
    text = "before\n" + pem("RSA PRIVATE KEY") + "\nafter the key"
    assert redact(text).text == "before\n[REDACTED:private_key]\nafter the key"


def test_truncated_private_key_is_still_redacted() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA" + "Ab9" * 30
    result = redact(text)
    assert result.text == "[REDACTED:private_key]"


def test_private_key_inside_json_string() -> None:
    block = pem("PRIVATE KEY")
    text = json.dumps({"private_key": block, "client_email": "svc@example.iam"})
    result = redact(text)
    assert block.splitlines()[1] not in result.text
    assert "svc@example.iam" in result.text
    assert "private_key" in result.kinds


def test_redacted_is_frozen_and_reports_changed() -> None:
    unchanged = Redacted(text="x", kinds=())
    changed = Redacted(text="[REDACTED:jwt]", kinds=("jwt",))
    assert unchanged.changed is False
    assert changed.changed is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        changed.text = "y"  # type: ignore[misc]


def test_contains_secret() -> None:
    assert contains_secret("my key is ghp_" + "a1B2c3D4" * 5) is True
    assert contains_secret("nothing to see here") is False


def test_redact_value_nested_structure() -> None:
    github = "ghp_" + "a1B2c3D4" * 5
    original: dict[str, Any] = {
        "note": f"use {github} for ci",
        "items": [1, None, 2.5, ("keep me", f"password=hunter2 {github}")],
        "nested": {"deeper": [{"x": "postgres://a:b1@h/db"}], "count": 3},
        "ghp_" + "key_name_is_not_redacted": "plain",
        "flag": True,
    }
    snapshot = json.dumps(original, sort_keys=True)
    result = redact_value(original)

    assert isinstance(result, dict)
    assert result["note"] == "use [REDACTED:github_token] for ci"
    assert result["items"][:3] == [1, None, 2.5]
    assert isinstance(result["items"][3], tuple)
    assert result["items"][3] == (
        "keep me",
        "password=[REDACTED:password_assignment] [REDACTED:github_token]",
    )
    assert result["nested"]["deeper"][0]["x"] == "postgres://a:[REDACTED:database_url_password]@h/db"
    assert result["nested"]["count"] == 3
    assert result["ghp_key_name_is_not_redacted"] == "plain"  # keys stay as they are
    assert result["flag"] is True
    assert json.dumps(original, sort_keys=True) == snapshot  # input not mutated
    assert result is not original


def test_redact_value_sensitive_keys_and_scalars() -> None:
    value = {
        "password": "hunter2",
        "api_key": "plainvalue",
        "refresh_token": ["t1", "t2"],
        "token_count": "42",
        "max_tokens": 1024,
        "secret": "null",
        "auth_token": "[REDACTED:jwt]",
    }
    assert redact_value(value) == {
        "password": "[REDACTED:password_assignment]",
        "api_key": "[REDACTED:api_key_assignment]",
        "refresh_token": ["[REDACTED:token_assignment]", "[REDACTED:token_assignment]"],
        "token_count": "42",
        "max_tokens": 1024,
        "secret": "null",
        "auth_token": "[REDACTED:jwt]",
    }
    assert redact_value(42) == 42
    assert redact_value(b"sk-" + b"A1b2" * 6) == b"sk-" + b"A1b2" * 6  # bytes are not text
    assert redact_value("password=x") == "password=[REDACTED:password_assignment]"


def test_structlog_processor_direct() -> None:
    event: dict[str, Any] = {
        "event": "connecting to postgres://app:pw9@db/engram",
        "password": "hunter2",
        "payload": {"headers": ["Authorization: Bearer " + "t" * 24]},
        "attempt": 2,
    }
    out = redact_processor(None, "info", event)
    assert out is event
    assert out["event"] == "connecting to postgres://app:[REDACTED:database_url_password]@db/engram"
    assert out["password"] == "[REDACTED:password_assignment]"
    assert out["payload"] == {"headers": ["Authorization: Bearer [REDACTED:bearer_token]"]}
    assert out["attempt"] == 2


def test_structlog_processor_in_pipeline() -> None:
    secret = "sk-" + "A1b2" * 10
    logger = structlog.wrap_logger(
        structlog.ReturnLogger(),
        processors=[redact_processor, structlog.processors.JSONRenderer(sort_keys=True)],
    )
    rendered = logger.info("calling model", key=secret, api_key="abc", nested={"k": [secret]})
    assert isinstance(rendered, str)
    assert secret not in rendered
    assert "abc" not in rendered
    assert json.loads(rendered) == {
        "event": "calling model",
        "key": "[REDACTED:openai_key]",
        "api_key": "[REDACTED:api_key_assignment]",
        "nested": {"k": ["[REDACTED:openai_key]"]},
    }


_ADVERSARIAL_UNIT = 200_000
ADVERSARIAL: dict[str, str] = {
    "word_dots": "a." * (_ADVERSARIAL_UNIT // 2),
    "word_dashes": "a-" * (_ADVERSARIAL_UNIT // 2),
    "begin_headers": "-----BEGIN RSA PRIVATE KEY-----\n" * (_ADVERSARIAL_UNIT // 32),
    "dashes": "-" * _ADVERSARIAL_UNIT,
    "assignments": "password=" * (_ADVERSARIAL_UNIT // 9),
    "open_quote": 'password="' + "a" * _ADVERSARIAL_UNIT,
    "escapes": 'password="\\' * (_ADVERSARIAL_UNIT // 11),
    "sk_prefixes": "sk-a" * (_ADVERSARIAL_UNIT // 4),
    "jwt_like": "eyJaaaaaaaa." * (_ADVERSARIAL_UNIT // 12),
    "url_like": "a://b:" * (_ADVERSARIAL_UNIT // 6),
    "url_long_user": "a://" + "b" * _ADVERSARIAL_UNIT,
    "digits": "4" * _ADVERSARIAL_UNIT,
    "digit_groups": "4111 1111 " * (_ADVERSARIAL_UNIT // 10),
    "bearer_spaces": "Bearer " + " " * _ADVERSARIAL_UNIT,
    "at_signs": "redis://:" + "@" * _ADVERSARIAL_UNIT,
    "repeated_keys": "password: " * (_ADVERSARIAL_UNIT // 10),
    "prose_nouns": "my password is " * (_ADVERSARIAL_UNIT // 15),
    "prose_qualifiers": "the token for a b c d e f " * (_ADVERSARIAL_UNIT // 26),
    "provider_words": "twilio heroku " * (_ADVERSARIAL_UNIT // 14),
    "sas_signatures": "sig=" * (_ADVERSARIAL_UNIT // 4),
    "credential_then_random": ("key " + "aB3" * 200 + " ") * (_ADVERSARIAL_UNIT // 605),
    "long_random_run": "token " + "aB3+" * (_ADVERSARIAL_UNIT // 4),
    "authorization_headers": "Authorization: Token " * (_ADVERSARIAL_UNIT // 21),
    "hex_run": "0x" + "0123456789abcdef" * (_ADVERSARIAL_UNIT // 16),
}


@pytest.mark.parametrize("text", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_adversarial_input_completes(text: str) -> None:
    # No timing assert: a catastrophic-backtracking regex would hang here for minutes, not pass.
    assert len(text) >= 190_000
    result = redact(text)
    assert isinstance(result.text, str)
    assert redact(result.text).text == result.text

"""Tests for app.lib.redaction.

Every "secret" below is assembled from obviously fake pieces at import time, so no string in this file
is a usable credential (and secret scanners have nothing real to flag).
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any, NamedTuple

import pytest
import structlog

from app.lib.redaction import (
    Redacted,
    _luhn_valid,
    contains_secret,
    redact,
    redact_processor,
    redact_value,
)


def _b64url(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _pem(label: str) -> str:
    body = "\n".join(["MIIEowIBAAKCAQEA" + "Fake0Key1Body2xY" * 3] * 4)
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiC" + "FAKEFAKE123"  # 40 chars, base64 alphabet
_JWT = ".".join(
    [
        _b64url('{"alg":"HS256","typ":"JWT"}'),
        _b64url('{"sub":"user-123","name":"Fake Person","iat":1516239022}'),
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV" + "_adQssw5c",
    ]
)
_GOOGLE = "AIza" + "SyFAKE0key1for2tests3only4ABCDEFG"[:35].ljust(35, "x")


class Case(NamedTuple):
    kind: str
    secret: str  # the substring that must disappear
    sentence: str  # "{}" marks where the secret goes; the rest must survive


SECRETS: dict[str, Case] = {
    "openai_legacy": Case("openai_key", "sk-" + "A1b2" * 12, "set OPENAI_API_KEY to {} and restart"),
    "openai_project": Case("openai_key", "sk-proj-" + "Ab3_" * 10 + "xY9-" * 5, "the new key {} works"),
    "dashscope": Case("dashscope_key", "sk-" + "0a1b2c3d4e5f6789" * 2, "qwen client uses {} today"),
    "anthropic": Case("anthropic_key", "sk-ant-api03-" + "Zz9_" * 20, "claude key {} was leaked"),
    "aws_access_key_id": Case("aws_access_key_id", "AKIA" + "QWER7TYU2IOP3ASD", "iam user key {} is old"),
    "aws_sts_key_id": Case("aws_access_key_id", "ASIA" + "ZXCV8BNM4LKJ5HGF", "session key {} expires"),
    "aws_secret_ini": Case("aws_secret_key", _AWS_SECRET, "[default]\naws_secret_access_key = {}\nregion=x"),
    "aws_secret_json": Case("aws_secret_key", _AWS_SECRET, 'creds {"SecretAccessKey": "{}"} end'),
    "alibaba": Case("alibaba_access_key_id", "LTAI" + "5tAbCdEfGh1JkLm2", "aliyun id {} for oss"),
    "github_ghp": Case("github_token", "ghp_" + "a1B2c3D4" * 5, "clone with {} please"),
    "github_gho": Case("github_token", "gho_" + "Q9w8E7r6" * 5, "oauth token {} granted"),
    "github_ghs": Case("github_token", "ghs_" + "Zx12Cv34" * 5, "actions token {} in ci"),
    "github_pat": Case(
        "github_token", "github_pat_" + "11ABCDEFG0" + "_" + "x1Y2z3" * 10, "fine-grained {} ok"
    ),
    "slack_bot": Case("slack_token", "xoxb-" + "1234567890-1234567890123-" + "AbCdEf" * 4, "bot uses {} now"),
    "slack_user": Case("slack_token", "xoxp-" + "9876543210-" + "QwErTy" * 4, "user token {} in env"),
    "slack_webhook": Case(
        "slack_webhook",
        "T00000000/B00000000/" + "XyZ" * 8,
        "post to https://hooks.slack.com/services/{} daily",
    ),
    "stripe_live": Case("stripe_key", "sk_live_" + "Zq8" * 8, "charge with {} in prod"),
    "stripe_restricted": Case("stripe_key", "rk_live_" + "Rr5" * 8, "restricted {} for reports"),
    "stripe_test": Case("stripe_key", "sk_test_" + "Tt7" * 8, "sandbox {} is fine"),
    "stripe_webhook": Case("stripe_key", "whsec_" + "Wh1" * 10, "verify with {} on receipt"),
    "google": Case("google_api_key", _GOOGLE, "maps key {} restricted"),
    "jwt": Case("jwt", _JWT, "session cookie {} decoded"),
    "bearer_header": Case("bearer_token", "opaque" + "Tok3n" * 6, "sent Authorization: Bearer {} upstream"),
    "bearer_curl": Case("bearer_token", "a8f" + "Q" * 20 + "z9", "curl -H 'authorization: bearer {}' api"),
    "basic_auth": Case("basic_auth", _b64url("admin:fakepass"), "header Authorization: Basic {} seen"),
    "pem_rsa": Case("private_key", _pem("RSA PRIVATE KEY"), "here is the key:\n{}\nthanks"),
    "pem_ec": Case("private_key", _pem("EC PRIVATE KEY"), "ec key\n{}\ndone"),
    "pem_openssh": Case("private_key", _pem("OPENSSH PRIVATE KEY"), "id_ed25519:\n{}\nbye"),
    "pem_generic": Case("private_key", _pem("PRIVATE KEY"), "pkcs8 {} end"),
    "pem_encrypted": Case("private_key", _pem("ENCRYPTED PRIVATE KEY"), "encrypted {} end"),
    "password_eq": Case("password_assignment", "hunter2", "login with password=hunter2 user=bob"),
    "passwd_quoted": Case("password_assignment", "S3cr3t!pass", "config passwd: 'S3cr3t!pass' loaded"),
    "pwd_dq": Case("password_assignment", "Xk9#mm2", 'db pwd="Xk9#mm2" set'),
    "env_password": Case("password_assignment", "fakeDbPass77", "export DB_PASSWORD=fakeDbPass77 now"),
    "json_password": Case("password_assignment", "pa55-word", 'body {"password": "pa55-word", "user": "x"}'),
    "token_colon": Case("token_assignment", "abc123def456ghi", "the config has token: abc123def456ghi set"),
    "access_token_query": Case(
        "token_assignment", "ya29fakeAccess", "GET /cb?access_token=ya29fakeAccess&x=1"
    ),
    "auth_token": Case("token_assignment", "tw1l10fake", "twilio auth_token = tw1l10fake here"),
    "api_key_quoted": Case("api_key_assignment", "k-9f8e7d6c5b4a", 'client(api_key = "k-9f8e7d6c5b4a")'),
    "apikey": Case("api_key_assignment", "q1w2e3r4t5", "url ?apikey=q1w2e3r4t5 done"),
    "x_api_key_header": Case("api_key_assignment", "hdrFakeKey01", "sent X-Api-Key: hdrFakeKey01 upstream"),
    "client_secret": Case("secret_assignment", "cs-fake-0042", "oauth client_secret: cs-fake-0042 stored"),
    "secret_plain": Case("secret_assignment", "s3kr1tvalue", "app secret=s3kr1tvalue in env"),
    "postgres_url": Case("database_url_password", "pgFake9", "dsn postgres://app:pgFake9@db:5432/engram ok"),
    "postgresql_asyncpg": Case(
        "database_url_password", "p@ss9", "url postgresql+asyncpg://app:p@ss9@db.internal/engram ok"
    ),
    "mysql_url": Case("database_url_password", "myFake1", "mysql://root:myFake1@127.0.0.1:3306/app used"),
    "mongodb_srv": Case("database_url_password", "mgFake2", "mongodb+srv://svc:mgFake2@cluster0.x.net/db ok"),
    "redis_url": Case("database_url_password", "rdFake3", "cache redis://:rdFake3@cache:6379/0 ok"),
    "amqp_url": Case("database_url_password", "mqFake4", "broker amqp://guest:mqFake4@rabbit/vhost ok"),
    "https_userinfo": Case("url_password", "webFake5", "fetch https://bob:webFake5@example.com/x ok"),
    "visa_spaced": Case("credit_card", "4111 1111 1111 1111", "card {} exp 12/29"),
    "mastercard_plain": Case("credit_card", "5555555555554444", "paid with {} yesterday"),
    "amex_dashed": Case("credit_card", "3782-822463-10005", "amex {} on file"),
    "sendgrid": Case("sendgrid_key", "SG." + "Sg1" * 8 + "." + "Sg2" * 15, "mailer key {} set"),
    "npm": Case("npm_token", "npm_" + "Np0" * 12, "publish with {} token"),
    "huggingface": Case("huggingface_token", "hf_" + "HfT0k" * 7, "download with {} from hub"),
    "twilio_api_key": Case("twilio_api_key", "SK" + "0123456789abcdef" * 2, "twilio sid {} created"),
    "engram_key": Case("engram_api_key", "egm_" + "1a2b3c4d_" + "Zk9_-q" * 7 + "x", "engram key {} works"),
    "engram_key_bearer": Case(
        "engram_api_key", "egm_" + "0f0f0f0f_" + "Eg1" * 15, "sent Authorization: Bearer {} upstream"
    ),
}


def _render(case: Case) -> str:
    return case.sentence.replace("{}", case.secret)


HARMLESS: dict[str, str] = {
    "git_sha": "merged in commit 3f786850e387550fdab836ed7e6dc881de23001b yesterday",
    "git_short_sha": "fixed by a1b2c3d on main",
    "uuid": "memory 123e4567-e89b-12d3-a456-426614174000 was recalled",
    "uuid_digits": "id 12345678-1234-1234-1234-123456789012 stored",
    "password_policy": "the password policy requires 12 characters",
    "reset_password": "reset your password in settings",
    "token_budget": "token budget of 1024",
    "max_tokens": "max_tokens: 1024 and token_budget=2048 and tokens_used=17",
    "tokenizer": "tokenizer: cl100k_base",
    "sk_learn": "we use sk-learn for the baseline",
    "scikit_learn": "pip install scikit-learn",
    "sk_hyphenated_prose": "see the sk-learn-compatible-pipeline-wrapper-v2-0 docs",
    "version": "upgrade to v2.13.0 today",
    "semver_pre": "released 1.2.3-beta.4 last week",
    "akia_alone": "keys starting with AKIA are long-term",
    "luhn_fail": "reference 4111111111111112 is not a card",
    "phone_us": "call +1 (415) 555-0132 after noon",
    "phone_uk": "call +44 20 7946 0958 tomorrow",
    "iso_date": "due 2024-06-01 at the latest",
    "iso_datetime": "at 2024-06-01T12:30:00Z it ran",
    "two_dates": "window 2024-01-15 2024-01-16 only",
    "ipv4": "server 192.168.1.10 responded",
    "ipv6": "link-local fe80::1ff:fe23:4567:890a is up",
    "bearer_of_bad_news": "I hate being the Bearer of bad news",
    "password_empty": "password: ",
    "password_null": "password: null",
    "sha256": "image sha256:" + "ab12cd34" * 8 + " pulled",
    "base64_word": "aGVsbG8= is hello in base64",
    "pg_no_password": "connect to postgresql://localhost/db first",
    "pg_user_only": "connect to postgresql://app@db:5432/engram first",
    "https_user_only": "open https://user@host for access",
    "https_port": "see https://example.com:8443/path?q=1 for docs",
    "token_expired": "my token is expired",
    "ghp_prose": "GitHub tokens use the ghp_ prefix",
    "ltai_prose": "Alibaba ids start with LTAI usually",
    "order_number": "order #100234-77 shipped",
    "epoch_ms": "event at 1718000000000 ms",
    "secret_prose": "the secret to good bread is patience",
    "email": "mail alice@example.com about it",
    "xoxb_prose": "Slack bot tokens begin with xoxb- by convention",
    "stripe_prose": "Stripe secret keys begin with sk_live_ in prod",
    "eyj_prose": "base64 JSON starts with eyJ typically",
    "aiza_prose": "Google keys start with AIza",
    "hf_function": "call hf_hub_download(repo_id)",
    "password_min_length": "PASSWORD_MIN_LENGTH=12",
    "aws_key_name_only": "aws_secret_access_key is required",
    "card_last4": "credit card ending in 4242",
    "price": "total $1,234.56 paid",
    "isbn": "ISBN 978-3-16-148410-0 cited",
    "engram_key_prefix": "revoked egm_1a2b3c4d yesterday",
    "engram_key_prose": "Engram keys look like egm_<prefix>_<secret>",
    "marker_already": "token: [REDACTED:jwt] and password=[REDACTED:password_assignment]",
}


def _surrounding_words(case: Case) -> list[str]:
    words = case.sentence.replace("{}", " ").split()
    return [w for w in words if w not in case.secret and case.secret not in w]


@pytest.mark.parametrize("case", list(SECRETS.values()), ids=list(SECRETS))
def test_secret_is_redacted(case: Case) -> None:
    text = _render(case)
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


@pytest.mark.parametrize("text", list(HARMLESS.values()), ids=list(HARMLESS))
def test_harmless_text_is_unchanged(text: str) -> None:
    result = redact(text)
    assert result.text == text
    assert result.changed is False
    assert result.kinds == ()
    assert contains_secret(text) is False


def test_corpus_sizes() -> None:
    assert len(SECRETS) >= 35
    assert len(HARMLESS) >= 35


@pytest.mark.parametrize("case", list(SECRETS.values()), ids=list(SECRETS))
def test_redaction_is_idempotent(case: Case) -> None:
    once = redact(_render(case))
    twice = redact(once.text)
    assert twice.text == once.text
    assert twice.changed is False  # existing markers are never re-redacted


def test_all_secrets_in_one_document() -> None:
    document = "\n".join(_render(case) for case in SECRETS.values())
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
            "aws_secret_access_key=" + _AWS_SECRET,
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
    text = "before\n" + _pem("RSA PRIVATE KEY") + "\nafter the key"
    assert redact(text).text == "before\n[REDACTED:private_key]\nafter the key"


def test_truncated_private_key_is_still_redacted() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA" + "Ab9" * 30
    result = redact(text)
    assert result.text == "[REDACTED:private_key]"


def test_private_key_inside_json_string() -> None:
    pem = _pem("PRIVATE KEY")
    text = json.dumps({"private_key": pem, "client_email": "svc@example.iam"})
    result = redact(text)
    assert "MIIEow" not in result.text
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
}


@pytest.mark.parametrize("text", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_adversarial_input_completes(text: str) -> None:
    # No timing assert: a catastrophic-backtracking regex would hang here for minutes, not pass.
    assert len(text) >= 190_000
    result = redact(text)
    assert isinstance(result.text, str)
    assert redact(result.text).text == result.text

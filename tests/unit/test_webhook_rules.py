"""The pure rules of webhooks: which URLs are accepted, how long a retry waits, how a delivery is signed,
and what an event says outside the service."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from app.lib.errors import ValidationFailed
from app.lib.settings import Settings
from app.webhooks.deliverer import backoff_s
from app.webhooks.payload import encode, envelope
from app.webhooks.signing import SigningKey, sign, verify
from app.webhooks.targets import TargetRefused, check_target, check_url


@pytest.mark.parametrize(
    "url",
    ["ftp://h/x", "file:///etc/passwd", "gopher://h", "http://", "https://u:p@h.example/x", "http://h:0/",
     "http://h.example/a b", "http://h.example:99999/", "javascript:alert(1)"],
)  # fmt: skip
def test_a_url_that_is_not_plain_http_to_a_host_is_refused(url: str) -> None:
    with pytest.raises(ValidationFailed):
        check_url(url)


def test_plain_http_and_https_urls_are_kept_as_given() -> None:
    for url in ("https://hooks.example.com/engram?x=1", "http://93.184.215.14:8080/h"):
        assert check_url(url) == url


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1/", "http://[::1]/", "http://10.0.0.8/", "http://192.168.1.1/", "http://172.16.0.1/",
     "http://169.254.169.254/", "http://0.0.0.0/", "http://[::ffff:127.0.0.1]/", "http://224.0.0.1/",
     "http://100.64.0.1/"],
)  # fmt: skip
async def test_non_public_addresses_are_refused_unless_allowed(url: str) -> None:
    with pytest.raises(TargetRefused):
        await check_target(url, allow_private=False)
    await check_target(url, allow_private=True)


async def test_a_public_address_is_accepted() -> None:
    await check_target("https://93.184.215.14/hook", allow_private=False)


def test_backoff_doubles_up_to_the_cap_with_jitter_between_half_and_all() -> None:
    rand = random.Random(7)
    for attempts in range(1, 15):
        ceiling = min(60.0, 2.0 * 2 ** (attempts - 1))
        waits = [backoff_s(attempts, 2.0, 60.0, rand) for _ in range(50)]
        assert all(ceiling / 2 <= w <= ceiling for w in waits)
        assert len(set(waits)) > 1  # jittered: retries of many deliveries do not land at once


def test_secrets_are_per_webhook_and_per_key() -> None:
    key, other = SigningKey(b"k" * 32), SigningKey(b"j" * 32)
    a, b = uuid.uuid4(), uuid.uuid4()
    assert key.secret(a) == key.secret(a)
    assert len({key.secret(a), key.secret(b), other.secret(a)}) == 3
    with pytest.raises(ValueError, match="16 bytes"):
        SigningKey(b"short")


def test_the_key_file_is_created_once_and_read_back(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "d")
    first, second = SigningKey.of(settings), SigningKey.of(settings)
    hook = uuid.uuid4()
    assert first.secret(hook) == second.secret(hook)
    path = settings.data_dir / "webhook-signing-key"
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_signature_covers_the_timestamp_and_the_exact_body() -> None:
    body = encode(envelope(5, {"kind": "created", "user_id": "u", "at": "2026-12-02T00:00:00+00:00"}))
    header = sign("whsec_a", 100, body)
    assert verify("whsec_a", 100, body, header)
    assert not verify("whsec_b", 100, body, header)
    assert not verify("whsec_a", 101, body, header)
    assert not verify("whsec_a", 100, body + b"\n", header)


def test_an_envelope_names_the_event_and_never_carries_a_tenant_or_reason() -> None:
    snapshot = {"memory_id": "m", "user_id": "u", "kind": "superseded", "actor": "key:k",
                "at": "2026-12-02T00:00:00+00:00", "details": {"successor": "n"}}  # fmt: skip
    body = envelope(42, snapshot)
    assert body == {
        "id": 42,
        "type": "memory.superseded",
        "created_at": "2026-12-02T00:00:00+00:00",
        "data": {"memory_id": "m", "user_id": "u", "project_id": None, "kind": "superseded",
                 "actor": "key:k", "details": {"successor": "n"}},
    }  # fmt: skip

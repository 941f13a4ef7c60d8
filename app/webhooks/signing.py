"""Webhook secrets and signatures.

A webhook's secret is derived from the service's signing key and the webhook's id (HMAC-SHA256), so it
is never stored: the database alone cannot sign, and the secret is shown once, when the webhook is
created. A delivery is signed like Stripe's and Standard Webhooks': HMAC-SHA256 with the secret over
`<timestamp>.<body>`, sent as `Engram-Signature: v1=<hex>` beside `Engram-Timestamp` (Unix seconds),
so a receiver can refuse replays older than a few minutes.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import secrets
import tempfile
import uuid
from pathlib import Path

from app.lib.settings import Settings

SECRET_PREFIX = "whsec_"  # noqa: S105 (a prefix, not a secret)
KEY_FILE = "webhook-signing-key"
SIGNATURE_VERSION = "v1"


class SigningKey:
    """The service's key that webhook secrets are derived from."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the webhook signing key must be at least 16 bytes")
        self._key = key

    @classmethod
    def of(cls, settings: Settings) -> SigningKey:
        """The configured key, else the data directory's (created once, mode 0600, shared by workers)."""
        if settings.webhook_signing_key is not None:
            return cls(settings.webhook_signing_key.get_secret_value().encode())
        return cls(_key_file(settings.data_dir / KEY_FILE))

    def secret(self, webhook_id: uuid.UUID) -> str:
        """The webhook's signing secret (what its receiver verifies with)."""
        digest = hmac.new(self._key, b"engram-webhook:" + webhook_id.bytes, hashlib.sha256).digest()
        return SECRET_PREFIX + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The `Engram-Signature` header's value for this body at this time."""
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return f"{SIGNATURE_VERSION}={mac.hexdigest()}"


def verify(secret: str, timestamp: int, body: bytes, header: str) -> bool:
    """What a receiver does: recompute and compare in constant time (any `v1=` entry may match)."""
    expected = sign(secret, timestamp, body)
    return any(hmac.compare_digest(expected, part.strip()) for part in header.split(","))


def _key_file(path: Path) -> bytes:
    """Read the key file, creating it first if absent. The key is written to a private temporary file
    and linked into place, so concurrent workers agree on one key and never read a half-written one."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".webhook-key-")  # mode 0600
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(32))
            with contextlib.suppress(FileExistsError):  # another worker linked its key first
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    key = path.read_text().strip().encode()
    if not key:
        raise RuntimeError(f"{path} is empty")
    return key

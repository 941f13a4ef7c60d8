"""For a webhook receiver: check that a delivery came from Engram (and is recent)."""

from __future__ import annotations

import hashlib
import hmac
import time


def verify_signature(
    secret: str,
    body: bytes,
    timestamp: str,
    signature: str,
    *,
    tolerance_s: float = 300.0,
    now: float | None = None,
) -> bool:
    """True if `Engram-Signature` is HMAC-SHA256(secret, "<Engram-Timestamp>.<body>") and the timestamp is
    within `tolerance_s` of now (a replayed old delivery fails). Deduplicate on `Engram-Event-Id`."""
    try:
        sent = int(timestamp)
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - sent) > tolerance_s:
        return False
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    expected = f"v1={mac}"
    return any(hmac.compare_digest(expected, part.strip()) for part in signature.split(","))

"""API keys: generated once, shown once, stored only as a SHA-256 hash.

Keys carry 256 bits of randomness, so a fast hash is enough (no password-style stretching needed).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

KEY_PREFIX = "egm_"


@dataclass(frozen=True, slots=True)
class NewKey:
    plaintext: str
    prefix: str
    key_hash: str


def hash_key(plaintext: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(plaintext.encode()).hexdigest()


def generate_key() -> NewKey:
    """A fresh key: `egm_<8-char public prefix>_<secret>`; the prefix identifies it in listings."""
    prefix = secrets.token_hex(4)
    plaintext = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    return NewKey(plaintext=plaintext, prefix=f"{KEY_PREFIX}{prefix}", key_hash=hash_key(plaintext))

"""Opaque keyset cursors over a text sort key, base64-encoded so clients treat them as tokens."""

from __future__ import annotations

import base64
import binascii

from app.lib.errors import ValidationFailed


def encode_key_cursor(key: str) -> str:
    """The cursor that resumes a listing after the row whose sort key is `key`."""
    return base64.urlsafe_b64encode(key.encode()).decode()


def decode_key_cursor(cursor: str) -> str:
    """The sort key a cursor carries; a 422 when it is not one `encode_key_cursor` made."""
    try:
        key = base64.urlsafe_b64decode(cursor.encode()).decode()
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise ValidationFailed("cursor is not one this service returned") from exc
    if "\x00" in key:  # no identifier holds one, and PostgreSQL text cannot
        raise ValidationFailed("cursor is not one this service returned")
    return key

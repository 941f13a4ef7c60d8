"""Strict JSON decoding for every body the service reads: a nesting limit checked on the raw bytes
before any decoder runs, then msgspec with its strict rules (no "0.9" for a float, no "true" for a
bool, unknown fields refused by the structs), and errors that name the bad field.

Why before decoding: msgspec (like every recursive decoder) raises RecursionError on ~1,000 levels of
nesting, which is a 2 kB body; counting brackets on the bytes costs a regular expression and a
cumulative sum, both in C, so a 64 MiB import is checked in tens of milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from functools import lru_cache
from typing import Any

import msgspec
import numpy as np

from app.lib.errors import BadRequest, ValidationFailed

DEFAULT_MAX_JSON_DEPTH = 32  # an export nests 4 deep; event details a few more

# A JSON string, escapes included (unrolled, so each character is tested once). An unterminated
# string is left in place: its brackets may then count, and the body is malformed anyway.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_OPEN = (ord("["), ord("{"))
_AT_PATH = re.compile(r"^(?P<message>.*?)(?: - at `\$\.?(?P<path>[^`]*)`)?$", re.DOTALL)


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in `raw` (0 for a scalar), brackets inside strings
    not counted. Not a validator: malformed JSON gets a number too, and the decoder refuses it next."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    if not brackets:
        return 0
    codes = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.where((codes == _OPEN[0]) | (codes == _OPEN[1]), 1, -1).astype(np.int64)
    return int(np.cumsum(steps).max())


def check_depth(raw: bytes, max_depth: int) -> None:
    # Nesting never exceeds the number of opening brackets, so a body with no more than `max_depth` of
    # them (a recall's has one) is within the limit without the count: two scans in C, no allocation.
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return
    if json_depth(raw) > max_depth:
        raise BadRequest(f"the JSON body nests deeper than {max_depth} levels")


@lru_cache(maxsize=256)
def _decoder(target: Hashable) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(target, strict=True)


_ENUM_VALUE = re.compile(r"Invalid enum value '.*?'(?= - at `|$)", re.DOTALL)
_UNKNOWN_FIELD = re.compile(r"unknown field `(?P<name>.*?)`", re.DOTALL)
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def without_values(message: str) -> str:
    """A validation message that names the field but never repeats the refused value: msgspec quotes a
    bad enum value ("Invalid enum value 'sk-...'") and an unknown key, either of which may be a secret
    pasted in the wrong place. A key that is a plain identifier is kept (it helps fix a typo)."""
    message = _ENUM_VALUE.sub("Invalid enum value", message)

    def name(match: re.Match[str]) -> str:
        key = match["name"]
        return f"unknown field `{key}`" if _PLAIN_NAME.fullmatch(key) else "an unknown field"

    return _UNKNOWN_FIELD.sub(name, message)


def field_error(exc: msgspec.ValidationError) -> ValidationFailed:
    """msgspec's "Expected `int`, got `str` - at `$.items[3].importance`" as
    "items[3].importance: Expected `int`, got `str`"."""
    match = _AT_PATH.match(without_values(str(exc)))
    message, path = (match["message"], match["path"]) if match else (str(exc), None)
    return ValidationFailed(f"{path}: {message}" if path else message)


def decode_strict(raw: bytes, target: Any, *, max_depth: int) -> Any:
    """Decode `raw` as `target` strictly; 400 for unreadable or too deep JSON, 422 naming the field."""
    check_depth(raw, max_depth)
    try:
        value = _decoder(target).decode(raw or b"null")
    except msgspec.ValidationError as exc:
        _check_well_formed(raw)  # a typed decoder stops at the first bad field, maybe before bad syntax
        raise field_error(exc) from exc
    except msgspec.DecodeError as exc:
        raise _malformed(exc) from exc
    return value


def _malformed(exc: msgspec.DecodeError) -> BadRequest:
    return BadRequest(f"the body is not valid JSON: {exc}")


def _check_well_formed(raw: bytes) -> None:
    """Malformed JSON is a 400 whichever error a typed decoder met first (depth already checked)."""
    try:
        msgspec.json.decode(raw or b"null")
    except msgspec.DecodeError as exc:
        raise _malformed(exc) from exc

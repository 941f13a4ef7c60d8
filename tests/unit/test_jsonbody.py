"""The nesting count that runs before any decoder, and the strict decode's errors."""

from __future__ import annotations

import json

import msgspec
import pytest

from app.lib.errors import BadRequest, ValidationFailed
from app.lib.jsonbody import check_depth, decode_strict, json_depth


@pytest.mark.parametrize(
    ("value", "depth"),
    [
        (1, 0),
        ("[[[", 0),
        ([], 1),
        ({"a": [1, {"b": []}]}, 4),
        ({"a": "]]]]", "b": [["[["]]}, 3),
        ({'k"[': ["\\", '\\"{']}, 2),
        ([[[]], [[[[]]]]], 5),
    ],
)
def test_json_depth_counts_arrays_and_objects_not_brackets_in_strings(value: object, depth: int) -> None:
    assert json_depth(json.dumps(value).encode()) == depth


def test_a_body_past_the_limit_is_refused_before_decoding() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(RecursionError):
        msgspec.json.decode(deep)  # guard: what the limit protects against
    with pytest.raises(BadRequest, match="nests deeper than 32"):
        decode_strict(deep, list[object], max_depth=32)
    assert decode_strict(b"[" * 32 + b"]" * 32, object, max_depth=32) is not None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"query": "x"}',
        b"[[[]]]",
        b"[[[[]]]]",
        b'["[[[[", "{{"]',
        b'[["[[[["]]]',
        b'[[[[["]"]]]]]',
        b"[" * 5,
        b'{"a": {"b": {"c": {"d": 1}}}}',
    ],
)
def test_the_limit_refuses_exactly_what_is_deeper_than_it(raw: bytes) -> None:
    """The opening-bracket bound that skips the count for small bodies decides as the count would."""
    for limit in range(2, 7):
        if json_depth(raw) > limit:
            with pytest.raises(BadRequest):
                check_depth(raw, limit)
        else:
            check_depth(raw, limit)


class Item(msgspec.Struct, forbid_unknown_fields=True):
    score: float
    flag: bool = False


def test_strict_decode_names_the_field_and_never_coerces() -> None:
    with pytest.raises(ValidationFailed) as caught:
        decode_strict(b'[{"score": 1}, {"score": "0.9"}]', list[Item], max_depth=8)
    assert caught.value.detail == "[1].score: Expected `float`, got `str`"
    with pytest.raises(ValidationFailed, match="flag"):
        decode_strict(b'{"score": 1, "flag": "true"}', Item, max_depth=8)


def test_malformed_json_is_a_400_even_when_a_field_is_wrong_first() -> None:
    with pytest.raises(BadRequest):
        decode_strict(b'{"score": "x", ', Item, max_depth=8)

"""The model's answer, decoded as untrusted input: JSON only, each proposal checked against a schema.

A proposal that does not fit is dropped on its own; an answer that is not JSON at all is an error
(the caller falls back to the offline dreamer).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

MAX_PROPOSALS = 50
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class ModelOutputError(Exception):
    """The model's answer is not the JSON object it was asked for."""


class ModelProposal(msgspec.Struct, kw_only=True):
    kind: str
    target_ids: list[str]
    rationale: str = ""
    content: str | None = None
    type: str | None = None
    importance: float | None = None
    salience: float | None = None


def parse_model_output(text: str | None) -> tuple[list[ModelProposal], int]:
    """`(proposals, how many items did not fit the schema)`; at most MAX_PROPOSALS are read."""
    if not text or not text.strip():
        raise ModelOutputError("the model returned no content")
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text
    try:
        data: Any = msgspec.json.decode(body.encode())
    except msgspec.DecodeError as exc:
        raise ModelOutputError("the model's answer is not JSON") from exc
    items = data.get("proposals") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ModelOutputError("the model's answer has no 'proposals' list")
    proposals: list[ModelProposal] = []
    bad = max(len(items) - MAX_PROPOSALS, 0)
    for item in items[:MAX_PROPOSALS]:
        try:
            proposals.append(msgspec.convert(item, ModelProposal))
        except msgspec.ValidationError:
            bad += 1
    return proposals, bad

"""The tools the model is offered (JSON schemas) and their arguments, validated as untrusted input."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import msgspec

from app.agent.providers.base import Tool
from app.vocabulary import MemoryType

TYPES = [t.value for t in MemoryType]

TOOLS: list[Tool] = [
    {
        "type": "function",
        "function": {
            "name": "remember",
            "description": (
                "Store a durable fact about the user or their work (a preference, decision, constraint, "
                "deadline ...). Use a short subject naming the attribute (e.g. 'theme', 'frontend "
                "framework'); a newer memory in the same subject replaces the old one."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "The fact, self-contained, one sentence."},
                    "type": {"type": "string", "enum": TYPES},
                    "subject": {"type": "string", "description": "The attribute this fact is about."},
                    "importance": {"type": "number", "minimum": 0, "maximum": 1},
                    "replaces": {
                        "type": "string",
                        "description": "For a correction: the old value this replaces (e.g. 'matcha').",
                    },
                    "project_id": {"type": "string"},
                },
                "required": ["content", "type"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "recall",
            "description": "Search the user's long-term memory. Call it before any decision that may depend "
            "on the user's preferences, constraints or earlier decisions.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "types": {"type": "array", "items": {"type": "string", "enum": TYPES}},
                    "project_id": {"type": "string"},
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "forget",
            "description": "Forget memories the user asks to remove: by id, or by describing them.",
            "parameters": {
                "type": "object",
                "properties": {
                    "memory_id": {"type": "string"},
                    "description": {"type": "string", "description": "What to forget, e.g. 'my address'."},
                    "subject": {"type": "string"},
                    "project_id": {"type": "string"},
                },
            },
        },
    },
]

Short = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class RememberArgs(msgspec.Struct, kw_only=True):
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=8000)]
    type: str = "fact"
    subject: Short | None = None
    importance: Unit = 0.5
    replaces: Short | None = None
    project_id: Short | None = None


class RecallArgs(msgspec.Struct, kw_only=True):
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    types: list[str] | None = None
    project_id: Short | None = None


class ForgetArgs(msgspec.Struct, kw_only=True):
    memory_id: uuid.UUID | None = None
    description: Annotated[str, msgspec.Meta(max_length=2000)] | None = None
    subject: Short | None = None
    project_id: Short | None = None


ARGUMENTS: dict[str, type[msgspec.Struct]] = {
    "remember": RememberArgs,
    "recall": RecallArgs,
    "forget": ForgetArgs,
}


class ToolArgumentError(ValueError):
    """The model called a tool with arguments that do not fit its schema."""


def parse_arguments(name: str, arguments: dict[str, Any]) -> msgspec.Struct:
    """Validate a tool call's arguments; unknown tools and bad values raise `ToolArgumentError`."""
    schema = ARGUMENTS.get(name)
    if schema is None:
        raise ToolArgumentError(f"unknown tool {name!r}; available: {', '.join(ARGUMENTS)}")
    try:
        parsed = msgspec.convert(arguments, schema)
    except msgspec.ValidationError as exc:
        raise ToolArgumentError(f"invalid arguments for {name}: {exc}") from None
    if isinstance(parsed, RememberArgs) and parsed.type not in TYPES:
        parsed.type = "fact"  # clamp an invented type rather than refuse the fact
    if isinstance(parsed, RecallArgs) and parsed.types:
        parsed.types = [t for t in parsed.types if t in TYPES] or None
    return parsed

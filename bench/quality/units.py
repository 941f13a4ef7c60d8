"""What every system stores and returns: units of text tied to their source turn.

Raw mode: one unit per turn ("<speaker or role>: <text>"), an episodic memory for Engram; a turn longer
than `chunk_chars` is split at paragraph, line, sentence or word boundaries into several units that all
carry its turn id (Engram refuses content above 8000 characters, and a sentence embedder reads only the
first ~256 word pieces of a text anyway). Extracted mode: the offline extractor
(`app.agent.extract.offline_actions`) run over each session (at most 50 messages per call, as
`POST /v1/memories/extract` takes), one unit per created fact, tied to the message it came from. When
turns name their speaker (LoCoMo: two people, both "users"), a fact's content and subject are qualified by
the speaker so that one person's "I live in Boston" never takes the other's slot.

Every unit's context line is rendered by Engram's own `render_line` (`- [date label] content`, the
label only where it adds meaning, app.memory.lines), so a unit costs the same tokens whichever baseline
returns it; Engram's own contexts show the date once per day instead (app.memory.packing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.agent.extract import offline_actions
from app.lib.tokens import TokenCounter
from app.memory.lines import render_line
from app.memory.slots import normalise_subject
from bench.quality.model import Conversation, Turn

EXTRACT_WINDOW = 50
DEFAULT_CHUNK_CHARS = 2000
_SEPARATORS = ("\n\n", "\n", ". ", " ")


@dataclass(frozen=True, slots=True)
class Unit:
    turn_id: str
    content: str
    at: datetime
    type: str
    subject: str | None
    project: str | None
    session_id: str
    line: str
    tokens: int
    importance: float = 0.5
    confidence: float = 0.8


@dataclass(frozen=True, slots=True)
class _LineSource:
    """The four attributes `render_line` reads from a memory."""

    type: str
    subject: str | None
    content: str
    valid_from: datetime


def line_for(mtype: str, subject: str | None, content: str, at: datetime) -> str:
    return render_line(_LineSource(mtype, subject, content, at))


def chunk(text: str, max_chars: int) -> list[str]:
    """`text` in pieces of at most `max_chars`, cut at the latest good boundary in each window."""
    text = text.replace("\x00", "").strip()
    if len(text) <= max_chars:
        return [text] if text else []
    pieces: list[str] = []
    rest = text
    while len(rest) > max_chars:
        window = rest[:max_chars]
        cut = max_chars
        for sep in _SEPARATORS:
            at = window.rfind(sep)
            if at >= max_chars // 2:
                cut = at + len(sep)
                break
        piece = rest[:cut].strip()
        if piece:
            pieces.append(piece)
        rest = rest[cut:]
    if rest.strip():
        pieces.append(rest.strip())
    return pieces


def make_unit(
    counter: TokenCounter,
    turn: Turn,
    content: str,
    mtype: str,
    subject: str | None,
    importance: float = 0.5,
    confidence: float = 0.8,
) -> Unit:
    slot = normalise_subject(subject)
    line = line_for(mtype, slot, content, turn.at)
    return Unit(
        turn_id=turn.id,
        content=content,
        at=turn.at,
        type=mtype,
        subject=slot,
        project=turn.project,
        session_id=turn.session_id,
        line=line,
        tokens=counter.count(line),
        importance=importance,
        confidence=confidence,
    )


def raw_units(
    conv: Conversation, counter: TokenCounter, chunk_chars: int = DEFAULT_CHUNK_CHARS
) -> list[Unit]:
    units: list[Unit] = []
    for turn in conv.turns:
        prefix = f"{turn.label}: "
        pieces = chunk(turn.text, chunk_chars - len(prefix))
        units.extend(make_unit(counter, turn, prefix + piece, "episodic", None) for piece in pieces)
    return units


@dataclass(frozen=True, slots=True)
class Forget:
    """A forget request the extractor found, applied before the facts of the same call."""

    turn: Turn
    subject: str | None
    query: str


def extracted_units(
    conv: Conversation, counter: TokenCounter, chunk_chars: int = DEFAULT_CHUNK_CHARS
) -> tuple[list[list[Unit]], list[list[Forget]]]:
    """Per extraction call (a session window): its facts and its forget requests."""
    calls: list[list[Unit]] = []
    forgets: list[list[Forget]] = []
    multi_speaker = any(t.speaker for t in conv.turns)
    for session in conv.sessions():
        for start in range(0, len(session), EXTRACT_WINDOW):
            window = session[start : start + EXTRACT_WINDOW]
            messages = [("user" if multi_speaker else t.role, t.text) for t in window]
            units: list[Unit] = []
            removed: list[Forget] = []
            for action in offline_actions(messages):
                turn = window[action.message_index if action.message_index is not None else 0]
                content, subject = action.content, action.subject
                if multi_speaker and turn.speaker:
                    content = f"{turn.speaker}: {content}"
                    subject = f"{turn.speaker} {subject}" if subject else None
                if action.action == "forget":
                    removed.append(Forget(turn, subject, content))
                    continue
                units.extend(
                    make_unit(
                        counter, turn, piece, action.type, subject, action.importance, action.confidence
                    )
                    for piece in chunk(content, chunk_chars)
                )
            calls.append(units)
            forgets.append(removed)
    return calls, forgets


def flatten(calls: Sequence[Sequence[Unit]]) -> list[Unit]:
    return [u for call in calls for u in call]

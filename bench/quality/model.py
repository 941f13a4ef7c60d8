"""The benchmark's data model and the neutral JSON format of ../shared/BENCH.md.

Every adapter (LoCoMo, BEAM, the synthetic generator, neutral JSON) produces a `Dataset`: conversations
whose turns carry their conversation time, and questions whose gold evidence is a list of turn ids.

The neutral format, as BENCH.md defines it, plus four optional fields this harness also reads:

    {"name": str,
     "conversations": [{"id": str, "user_id": str,
                        "sessions": [{"id": str, "date": str | null, "project": str | null,
                                      "turns": [{"id": str, "role": "user" | "assistant", "text": str,
                                                 "speaker": str | null}]}]}],
     "questions": [{"id": str, "conversation_id": str, "question": str, "category": str,
                    "evidence": [turn id], "stale_evidence": [turn id],
                    "expected": [substring], "stale": [substring],
                    "group": "main" | "adversarial" | "no_evidence" | "abstention",
                    "project": str | null, "kind": "update" | "contradiction" | null}]}

`date` is ISO 8601 (a date or a date-time); turns of a session are one minute apart; a session without a
date is placed one day after the previous one. `project` scopes a session's memories (Engram stores them
under that project) and a question's recall. `group` keeps questions out of the headline figures
(adversarial, unanswerable); `kind` selects the update-order and both-statements metrics.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

BASE_TIME = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
TURN_STEP = timedelta(minutes=1)
GROUPS = ("main", "adversarial", "no_evidence", "abstention")


@dataclass(frozen=True, slots=True)
class Turn:
    id: str
    role: str  # user | assistant
    text: str
    at: datetime
    session_id: str
    speaker: str | None = None
    project: str | None = None

    @property
    def label(self) -> str:
        """Who said it, as the rendered context names them."""
        return self.speaker or self.role


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    user_id: str
    turns: list[Turn]  # chronological

    @property
    def end(self) -> datetime:
        return max(t.at for t in self.turns)

    def sessions(self) -> list[list[Turn]]:
        """Turns grouped by session, in order."""
        out: list[list[Turn]] = []
        for turn in self.turns:
            if out and out[-1][0].session_id == turn.session_id:
                out[-1].append(turn)
            else:
                out.append([turn])
        return out


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    conversation_id: str
    question: str
    category: str
    evidence: tuple[str, ...] = ()
    stale_evidence: tuple[str, ...] = ()
    expected: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    group: str = "main"
    project: str | None = None
    kind: str | None = None  # update: current vs superseded order; contradiction: both statements

    @property
    def by_ids(self) -> bool:
        """Scored on turn ids (else on substrings of the context)."""
        return bool(self.evidence or self.stale_evidence)


@dataclass(slots=True)
class Dataset:
    name: str
    kind: str
    conversations: list[Conversation]
    questions: list[Question]
    notes: list[str] = field(default_factory=list)

    def limit(self, n: int | None) -> Dataset:
        """The first `n` conversations and their questions."""
        if n is None:
            return self
        keep = self.conversations[:n]
        ids = {c.id for c in keep}
        questions = [q for q in self.questions if q.conversation_id in ids]
        return Dataset(self.name, self.kind, keep, questions, self.notes)


def parse_time(value: str | None) -> datetime | None:
    """ISO 8601 date or date-time (naive means UTC)."""
    if not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        parsed = datetime.combine(date.fromisoformat(text), datetime.min.time())
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _strs(values: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in (values or []))


def from_neutral(payload: dict[str, Any], kind: str = "json") -> Dataset:
    """A dataset in the neutral format (BENCH.md) -> `Dataset`."""
    conversations = []
    for conv in payload["conversations"]:
        turns: list[Turn] = []
        previous: datetime | None = None
        for s_index, session in enumerate(conv["sessions"]):
            start = parse_time(session.get("date"))
            if start is None:
                start = (
                    BASE_TIME + timedelta(days=s_index) if previous is None else previous + timedelta(days=1)
                )
            for t_index, turn in enumerate(session["turns"]):
                turns.append(
                    Turn(
                        id=str(turn["id"]),
                        role=str(turn.get("role", "user")),
                        text=str(turn["text"]),
                        at=start + t_index * TURN_STEP,
                        session_id=str(session["id"]),
                        speaker=turn.get("speaker"),
                        project=session.get("project"),
                    )
                )
            previous = start
        conversations.append(Conversation(str(conv["id"]), str(conv.get("user_id") or conv["id"]), turns))
    questions = [
        Question(
            id=str(q["id"]),
            conversation_id=str(q["conversation_id"]),
            question=str(q["question"]),
            category=str(q.get("category", "")),
            evidence=_strs(q.get("evidence")),
            stale_evidence=_strs(q.get("stale_evidence")),
            expected=_strs(q.get("expected")),
            stale=_strs(q.get("stale")),
            group=str(q.get("group") or "main"),
            project=q.get("project"),
            kind=q.get("kind"),
        )
        for q in payload["questions"]
    ]
    return Dataset(str(payload.get("name", kind)), kind, conversations, questions)


def to_neutral(dataset: Dataset) -> dict[str, Any]:
    """`Dataset` -> the neutral format (sessions dated by their first turn)."""
    conversations = []
    for conv in dataset.conversations:
        sessions = [
            {
                "id": turns[0].session_id,
                "date": turns[0].at.isoformat(),
                "project": turns[0].project,
                "turns": [{"id": t.id, "role": t.role, "text": t.text, "speaker": t.speaker} for t in turns],
            }
            for turns in conv.sessions()
        ]
        conversations.append({"id": conv.id, "user_id": conv.user_id, "sessions": sessions})
    questions = [
        {
            "id": q.id,
            "conversation_id": q.conversation_id,
            "question": q.question,
            "category": q.category,
            "evidence": list(q.evidence),
            "stale_evidence": list(q.stale_evidence),
            "expected": list(q.expected),
            "stale": list(q.stale),
            "group": q.group,
            "project": q.project,
            "kind": q.kind,
        }
        for q in dataset.questions
    ]
    return {"name": dataset.name, "conversations": conversations, "questions": questions}


def load_neutral(path: Path) -> Dataset:
    return from_neutral(json.loads(path.read_text()), "json")

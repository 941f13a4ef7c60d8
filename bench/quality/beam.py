"""BEAM adapter (arXiv 2510.27246): a chat folder (`chat.json` + `probing_questions.json`) or a folder of
numbered chat folders -> `Dataset`, one conversation per chat.

Turn ids are BEAM's message ids. Each batch carries a time anchor on its first message ("March-15-2024");
a batch's sub-conversations become sessions spread from its anchor, one day apart (closer when the next
anchor comes sooner), messages one minute apart. The "->-> 1,1" position markers BEAM appends to user
messages are removed. Evidence is `source_chat_ids`: a list (nested lists flattened), or for
knowledge_update `original_info` (stale) / `updated_info` (current, update order scored), for
contradiction_resolution `first_statement` + `second_statement` (both needed), for temporal questions
both events. Questions without ids (abstention) form their own group.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.quality.model import BASE_TIME, TURN_STEP, Conversation, Dataset, Question, Turn

_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")
DAY = timedelta(days=1)


def flatten_ids(value: Any) -> list[str]:
    """Message ids from a list that may nest lists; order kept, duplicates dropped."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop(0)
        if isinstance(item, list):
            stack[:0] = item
        elif item is not None and str(item) not in out:
            out.append(str(item))
    return out


def parse_anchor(value: str | None) -> datetime | None:
    if not value:
        return None
    for fmt in ("%B-%d-%Y", "%b-%d-%Y", "%Y-%m-%d"):
        try:
            return datetime.strptime(value.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def evidence_of(category: str, source: Any) -> tuple[list[str], list[str], str | None]:
    """(current evidence, stale evidence, kind) for one probing question."""
    if isinstance(source, dict):
        if "updated_info" in source or "original_info" in source:
            return flatten_ids(source.get("updated_info")), flatten_ids(source.get("original_info")), "update"
        ids = flatten_ids(list(source.values()))
        return ids, [], "contradiction" if category == "contradiction_resolution" else None
    return flatten_ids(source), [], None


def _batch_anchor(batch: dict[str, Any]) -> datetime | None:
    anchor = parse_anchor(batch.get("time_anchor"))
    for group in batch.get("turns", []):
        for message in group:
            anchor = anchor or parse_anchor(message.get("time_anchor"))
    return anchor


def convert_chat(
    chat_id: str, chat: list[dict[str, Any]], probing: dict[str, Any]
) -> tuple[Conversation, list[Question], int]:
    anchors = [_batch_anchor(b) for b in chat]
    turns: list[Turn] = []
    fallback = BASE_TIME
    for b_index, batch in enumerate(chat):
        start = anchors[b_index] or fallback
        groups = batch.get("turns", [])
        following = next((a for a in anchors[b_index + 1 :] if a is not None), None)
        step = DAY
        if following is not None and groups and following > start:
            step = min(DAY, (following - start) / len(groups))
        for g_index, group in enumerate(groups):
            session_start = start + g_index * step
            for m_index, message in enumerate(group):
                turns.append(
                    Turn(
                        id=str(message["id"]),
                        role=str(message.get("role", "user")),
                        text=_MARKER.sub("", str(message.get("content", ""))),
                        at=session_start + m_index * TURN_STEP,
                        session_id=f"b{batch.get('batch_number', b_index + 1)}-{g_index}",
                    )
                )
        fallback = start + max(len(groups), 1) * step
    turns.sort(key=lambda t: t.at)
    known = {t.id for t in turns}
    questions: list[Question] = []
    dropped = 0
    for category, items in probing.items():
        for index, item in enumerate(items):
            current, stale, kind = evidence_of(category, item.get("source_chat_ids"))
            dropped += sum(i not in known for i in current + stale)
            current = [i for i in current if i in known]
            stale = [i for i in stale if i in known and i not in current]
            group = "main" if current else "abstention" if category == "abstention" else "no_evidence"
            questions.append(
                Question(
                    id=f"{chat_id}/{category}/{index}",
                    conversation_id=chat_id,
                    question=str(item["question"]),
                    category=category,
                    evidence=tuple(current),
                    stale_evidence=tuple(stale),
                    group=group,
                    kind=kind,
                )
            )
    return Conversation(chat_id, chat_id, turns), questions, dropped


def chat_dirs(path: Path) -> list[Path]:
    if (path / "chat.json").is_file():
        return [path]
    dirs = [p for p in path.iterdir() if (p / "chat.json").is_file()]
    return sorted(dirs, key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name))


def load(path: Path, limit: int | None = None) -> Dataset:
    conversations: list[Conversation] = []
    questions: list[Question] = []
    dropped = 0
    for folder in chat_dirs(path)[:limit]:
        chat = json.loads((folder / "chat.json").read_text())
        probing_file = folder / "probing_questions.json"
        probing = json.loads(probing_file.read_text()) if probing_file.is_file() else {}
        chat_id = f"beam-{path.name}-{folder.name}" if folder != path else f"beam-{folder.name}"
        conv, qs, lost = convert_chat(chat_id, chat, probing)
        conversations.append(conv)
        questions.extend(qs)
        dropped += lost
    notes = [f"{dropped} evidence ids named no message and were dropped"] if dropped else []
    notes.append("abstention questions (no evidence ids) are reported separately")
    return Dataset(f"beam:{path.name}", "beam", conversations, questions, notes)

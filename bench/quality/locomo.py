"""LoCoMo adapter (Maharana et al., ACL 2024): `locomo10.json`-shaped files -> `Dataset`.

Each sample is one conversation between two people (both stored, each turn prefixed with its speaker);
a turn that shares an image carries its caption, as the paper's retrieval over dialog turns did. Session
times ("1:56 pm on 8 May, 2023") become turn times one minute apart. Evidence ids are normalised: strings
holding several ids ('D8:6; D9:17') are split on [;, ], zero padding and stray colons are dropped
('D30:05' -> 'D30:5', 'D:11:26' -> 'D11:26'), and ids that name no turn ('D', a turn that does not
exist) are dropped and counted. Category 5 (adversarial) and questions left without evidence are kept
in separate groups, out of the headline figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.quality.model import TURN_STEP, Conversation, Dataset, Question, Turn

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_SPLIT = re.compile(r"[;,\s]+")
_ID = re.compile(r"D:?(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")


def normalise_evidence(raw: Iterable[str], known: set[str] | None = None) -> tuple[list[str], list[str]]:
    """(clean ids in order without duplicates, pieces that are not a known turn id)."""
    ids: list[str] = []
    dropped: list[str] = []
    for item in raw:
        for piece in _SPLIT.split(str(item)):
            if not piece:
                continue
            m = _ID.fullmatch(piece)
            turn_id = f"D{int(m[1])}:{int(m[2])}" if m else None
            if turn_id is None or (known is not None and turn_id not in known):
                dropped.append(piece)
            elif turn_id not in ids:
                ids.append(turn_id)
    return ids, dropped


def parse_session_time(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (UTC)."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    return f"{text} [shares a photo: {caption}]" if caption else text


def convert(samples: list[dict[str, Any]], name: str = "locomo") -> Dataset:
    conversations: list[Conversation] = []
    questions: list[Question] = []
    fixed = dropped_total = 0
    for sample in samples:
        conv_id = str(sample["sample_id"])
        body = sample["conversation"]
        numbers = sorted(int(m[1]) for k in body if (m := _SESSION.fullmatch(k)))
        turns: list[Turn] = []
        for number in numbers:
            start = parse_session_time(body[f"session_{number}_date_time"])
            for index, raw in enumerate(body[f"session_{number}"]):
                turns.append(
                    Turn(
                        id=str(raw["dia_id"]),
                        role="user",  # both speakers are people whose facts are worth remembering
                        text=turn_text(raw),
                        at=start + index * TURN_STEP,
                        session_id=f"S{number}",
                        speaker=str(raw["speaker"]),
                    )
                )
        conversations.append(Conversation(conv_id, conv_id, turns))
        known = {t.id for t in turns}
        for index, qa in enumerate(sample["qa"]):
            raw_ids = [str(e) for e in qa.get("evidence", [])]
            ids, dropped = normalise_evidence(raw_ids, known)
            dropped_total += len(dropped)
            fixed += int(sorted(ids) != sorted(raw_ids) and bool(ids))
            category = int(qa["category"])
            group = "adversarial" if category == 5 else "main" if ids else "no_evidence"
            questions.append(
                Question(
                    id=f"{conv_id}/q{index}",
                    conversation_id=conv_id,
                    question=str(qa["question"]),
                    category=CATEGORIES.get(category, str(category)),
                    evidence=tuple(ids),
                    group=group,
                )
            )
    notes = [
        f"evidence normalised on {fixed} questions; {dropped_total} id pieces named no turn and were dropped",
        "adversarial (category 5) and no-evidence questions are reported separately",
    ]
    return Dataset(name, "locomo", conversations, questions, notes)


def load(path: Path) -> Dataset:
    return convert(json.loads(path.read_text()), name=f"locomo:{path.stem}")

"""The supersession decision on the write path, as a pure function (DESIGN.md, write path step 4)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from app.vocabulary import SupersedeRule


class Action(StrEnum):
    CREATE = "create"  # insert; nothing current is replaced
    DEDUPLICATE = "deduplicate"  # same slot (or scope) and same content: reinforce the existing memory
    SUPERSEDE = "supersede"  # insert and retire the existing memory
    PROPOSE = "propose"  # insert, and ask a human whether it replaces the existing one
    ARRIVED_STALE = "arrived_stale"  # insert as already superseded: the existing one was observed later


@dataclass(frozen=True, slots=True)
class Existing:
    """The current memory the new one may collide with."""

    id: uuid.UUID
    content_hash: str
    protected: bool  # pinned or critical_rule: never silently superseded
    valid_from: datetime


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    target: uuid.UUID | None = None
    rule: SupersedeRule | None = None
    cosine: float | None = None
    similarity: float | None = None  # app.memory.similarity, when the review band was reached by it


def decide_slot(new_hash: str, observed_at: datetime, current: Existing | None) -> Decision | None:
    """Exact-slot rule: the same subject and type in the same scope. None when the slot is empty."""
    if current is None:
        return None
    if current.content_hash == new_hash:
        return Decision(Action.DEDUPLICATE, current.id)
    if current.protected:
        return Decision(Action.PROPOSE, current.id, SupersedeRule.EXACT_SLOT)
    if observed_at < current.valid_from:
        return Decision(Action.ARRIVED_STALE, current.id, SupersedeRule.OBSERVED_LATER)
    return Decision(Action.SUPERSEDE, current.id, SupersedeRule.EXACT_SLOT)


def decide_semantic(
    observed_at: datetime,
    nearest: Existing | None,
    cosine: float | None,
    *,
    supersede_at: float,
    review_at: float,
    numbers_differ: bool = False,
    similar: Existing | None = None,
    similarity: float | None = None,
) -> Decision:
    """Semantic rule: the nearest current memory of the same type in the same scope, by cosine.

    Only the cosine supersedes automatically (a false supersede retires a user's fact). The review band
    is reached by the cosine, or by the similarity (app.memory.similarity: the cosine or the two texts'
    keyword coverage, whichever is higher) of the most `similar` of the nearest memories: word overlap
    may make a pair a proposal for a person, never an automatic supersession.

    Embeddings barely see a changed number ("34 years old" vs "35"), so when the numbers in the two
    texts differ a high cosine is not proof of the same fact: a human reviews it instead.
    """
    if nearest is not None and cosine is not None and cosine >= review_at:
        if cosine >= supersede_at and not nearest.protected and not numbers_differ:
            if observed_at < nearest.valid_from:
                return Decision(Action.ARRIVED_STALE, nearest.id, SupersedeRule.OBSERVED_LATER, cosine)
            return Decision(Action.SUPERSEDE, nearest.id, SupersedeRule.SEMANTIC, cosine)
        return Decision(Action.PROPOSE, nearest.id, SupersedeRule.SEMANTIC, cosine)
    if similar is not None and similarity is not None and similarity >= review_at:
        return Decision(Action.PROPOSE, similar.id, SupersedeRule.SEMANTIC, None, similarity)
    return Decision(Action.CREATE)

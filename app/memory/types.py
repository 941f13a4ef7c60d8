"""Vocabulary of the memory domain: types, statuses, privacy levels, sources, event kinds."""

from __future__ import annotations

from enum import StrEnum


class MemoryType(StrEnum):
    IDENTITY = "identity"
    PREFERENCE = "preference"
    FACT = "fact"
    DECISION = "decision"
    CONSTRAINT = "constraint"
    CRITICAL_RULE = "critical_rule"
    PROJECT = "project"
    TASK = "task"
    DEADLINE = "deadline"
    LEARNING_GOAL = "learning_goal"
    MISTAKE = "mistake"
    EPISODIC = "episodic"
    TEMPORARY = "temporary"


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    PINNED = "pinned"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    EXPIRED = "expired"
    FORGOTTEN = "forgotten"


LIVE_STATUSES: tuple[str, ...] = (MemoryStatus.ACTIVE, MemoryStatus.PINNED)


class Privacy(StrEnum):
    PUBLIC = "public"
    PRIVATE = "private"
    SENSITIVE = "sensitive"


class Source(StrEnum):
    AGENT = "agent"
    API = "api"
    EXTRACT = "extract"
    IMPORT = "import"
    DREAM = "dream"


class EventKind(StrEnum):
    CREATED = "created"
    DEDUPLICATED = "deduplicated"
    SUPERSEDED = "superseded"
    REINFORCED = "reinforced"
    UPDATED = "updated"
    PINNED = "pinned"
    UNPINNED = "unpinned"
    ARCHIVED = "archived"
    EXPIRED = "expired"
    RESTORED = "restored"
    FORGOTTEN = "forgotten"
    ERASED = "erased"
    MERGED = "merged"
    IMPORTED = "imported"
    REEMBEDDED = "reembedded"
    PROPOSED = "proposed"


class ProposalKind(StrEnum):
    MERGE = "merge"
    FORGET = "forget"
    RESALIENCE = "resalience"
    SUPERSEDE = "supersede"


class ProposalStatus(StrEnum):
    PROPOSED = "proposed"
    APPROVED = "approved"
    REJECTED = "rejected"
    APPLIED = "applied"
    STALE = "stale"


class SupersedeRule(StrEnum):
    """Which rule retired a memory; recorded in its event so history can say why."""

    EXACT_SLOT = "exact_slot"
    SEMANTIC = "semantic_cosine"
    MODEL = "model"
    PROPOSAL = "approved_proposal"
    OBSERVED_LATER = "observed_later"

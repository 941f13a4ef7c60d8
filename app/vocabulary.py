"""The vocabulary of Engram, defined once: memory types, statuses, privacy levels, sources, event and
proposal kinds, what a scope of memories includes, and which memories are protected.

Every field that holds one of these values is typed with its enum (API payloads, the service's inputs, the
ORM columns), so an unknown value is refused where it enters and never checked by hand again.
This module imports nothing of Engram but the tenant type: every layer may use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from app.tenancy.types import TenantId


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

    @classmethod
    def of(cls, value: object) -> MemoryType | None:
        """The type `value` names, or None: the one check for types that arrive as untrusted text (a
        model's answer, a stored payload) rather than through a typed field."""
        return cls(value) if isinstance(value, str) and value in cls._value2member_map_ else None

    @classmethod
    def or_fact(cls, value: str) -> MemoryType:
        """A model's type, clamped: an invented one becomes a fact rather than losing the memory."""
        return cls.of(value) or cls.FACT


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    PINNED = "pinned"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    EXPIRED = "expired"
    FORGOTTEN = "forgotten"


# The statuses recall and the write path treat as current.
LIVE_STATUSES: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE, MemoryStatus.PINNED)


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
    PROMOTION = "promotion"  # a space's memory, written when a promotion proposal was approved


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
    PROPOSAL_APPROVED = "proposal_approved"  # a person decided a proposal naming this memory
    PROPOSAL_REJECTED = "proposal_rejected"
    PROMOTED = "promoted"  # a memory was copied into a shared space (on the source and on the copy)


class ProposalKind(StrEnum):
    MERGE = "merge"
    FORGET = "forget"
    RESALIENCE = "resalience"
    SUPERSEDE = "supersede"
    PROMOTE = "promote"  # copy a memory into a shared space (app/spaces/)


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


def is_protected(status: str, mtype: str) -> bool:
    """A pinned memory or a critical rule: never replaced, merged away or bulk-forgotten without a
    person's approval, and always considered by recall. (Its SQL twin, which matches a partial index
    word for word, is `app.store.sql.PROTECTED_SQL`.)"""
    return status == MemoryStatus.PINNED or mtype == MemoryType.CRITICAL_RULE


class Reach(StrEnum):
    """Which of a user's projects a scope covers."""

    ONLY = "only"  # exactly this project; without one, the user's global (project-less) memories
    WITH_GLOBAL = "with_global"  # this project and the user's global memories; without one, the global
    ALL = "all"  # every memory of the user, whatever its project


# The user_id of a shared space's memories: no API identifier is empty, so no user's scope matches them.
SPACE_USER = ""


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memories a question is about: one tenant's user, and which of the user's projects.

    A slot (the write path: subject, type) lives in one project exactly (`Reach.ONLY`); recall sees a
    project and the user's global memories (`Reach.WITH_GLOBAL`); listing, export and erase take every
    project of the user or narrow to one (`Scope.of_user`).
    """

    tenant: TenantId
    user_id: str
    project_id: str | None
    reach: Reach = Reach.ONLY
    # An agent's view: its own memories and the user's agent-less ones; `own`: the agent's own only (its
    # slots); `shared`: also the spaces the agent is granted. None: every agent's, and no space's.
    agent_id: str | None = None
    own: bool = False
    shared: bool = False
    space: str | None = None  # a shared space's own memories (user_id is then SPACE_USER)

    @classmethod
    def of_space(cls, tenant: TenantId, space: str) -> Scope:
        """A shared space's memories: its slots, its supersession."""
        return cls(tenant, SPACE_USER, None, space=space)

    @classmethod
    def of_user(
        cls, tenant: TenantId, user_id: str, project_id: str | None, *, in_project: Reach = Reach.ONLY
    ) -> Scope:
        """All of a user's memories, or, when `project_id` is given, that project's (`in_project`)."""
        return cls(tenant, user_id, project_id, Reach.ALL if project_id is None else in_project)


class AsOfKind(StrEnum):
    """Which time an `as_of` instant is read in."""

    VALID = "valid"  # what held at T as Engram knows it now: valid_from <= T < valid_to
    RECORDED = "recorded"  # what Engram held current at T: its rows and audit events up to T


@dataclass(frozen=True, slots=True)
class Moment:
    """Which of a scope's memories count as current for a read.

    The present (the default): live memories, unexpired now. `past`: the present plus what has been
    superseded (a question about the past, "what did we use before Next.js?"). `as_of`: what was
    current at that instant, in `kind` time.
    """

    as_of: datetime | None = None
    kind: AsOfKind = AsOfKind.VALID
    past: bool = False

    @property
    def present(self) -> bool:
        return self.as_of is None and not self.past


PRESENT = Moment()

"""One request description per API operation: a typed struct of its arguments plus its route.

A request's fields are its arguments: those named in the path template go into the path, the rest into
the query string (GET, DELETE) or the JSON body. Arguments left at their default are not sent, so the
service's own defaults apply. `Request[T]` says what the operation returns; the clients (`Engram`,
`AsyncEngram`) only execute these descriptions, so an operation is written once for both.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

import msgspec

from engram_sdk.models import (
    ApplyResult,
    AsOfKind,
    BatchResult,
    ChangeEvent,
    ChatResult,
    Delivery,
    DeliveryPage,
    DreamResult,
    EraseReceipt,
    EventPage,
    ExportDocument,
    ExtractResult,
    Forgotten,
    Health,
    History,
    ImportResult,
    Memory,
    MemoryPage,
    MemoryStatus,
    MemoryType,
    Privacy,
    ProjectPage,
    Proposal,
    ProposalPage,
    ProposalStatus,
    Readiness,
    RecallResult,
    ReembedResult,
    RememberResult,
    Role,
    Space,
    SpaceGrant,
    SpaceList,
    Stats,
    Usage,
    UsageSeries,
    UserPage,
    Webhook,
    WebhookCreated,
    WebhookList,
)

T = TypeVar("T")
Id = uuid.UUID | str
UNSET: Any = msgspec.UNSET
Unset = msgspec.UnsetType


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str  # a template: `{name}` is the request field of that name
    query: tuple[tuple[str, str], ...] = ()  # fixed query parameters (`?erase=true`)
    accept: frozenset[int] = frozenset({200, 201})  # statuses whose body is the result
    raw_body: str | None = None  # this field's value is the whole body (bytes or a struct)


class Request(msgspec.Struct, Generic[T], omit_defaults=True):
    """Base of every request description; `T` is what the operation returns."""

    route: ClassVar[Route]


def result_type(request: type[Request[Any]]) -> Any:
    """The `T` of a request class's `Request[T]` base."""
    for cls in request.__mro__:
        for base in getattr(cls, "__orig_bases__", ()):
            if getattr(base, "__origin__", None) is Request:
                return base.__args__[0]
    raise TypeError(f"{request.__name__} does not say what it returns (subclass Request[T])")


# --- memories -----------------------------------------------------------------------------------------


class NewMemory(msgspec.Struct, omit_defaults=True):
    """A memory to store (`remember`, `remember_batch`). Unset fields take the service's defaults."""

    user_id: str
    content: str
    type: MemoryType | None = None  # default fact
    subject: str | None = None  # the slot: a newer memory with the same subject and type supersedes
    project_id: str | None = None
    session_id: str | None = None
    importance: float | None = None
    confidence: float | None = None
    privacy: Privacy | None = None
    tags: list[str] | None = None
    expires_at: datetime | None = None
    ttl_seconds: int | None = None
    pinned: bool | None = None
    observed_at: datetime | None = None  # when the fact was said (importing past conversations)
    summary: str | None = None
    agent_id: str | None = None  # private to this agent; unset: the user's, seen by all their agents


class Remember(NewMemory, Request[RememberResult]):
    """Store one memory: created, deduplicated (same content) or superseding the slot's current one."""

    route = Route("POST", "/v1/memories")


class RememberBatch(Request[BatchResult]):
    """Store up to 1,000 memories in one transaction (one embedding call); a bad item writes nothing."""

    route = Route("POST", "/v1/memories/batch")
    items: list[NewMemory]


class ListMemories(Request[MemoryPage]):
    """One page of a user's memories (newest first), filtered by project, status, type, subject or text."""

    route = Route("GET", "/v1/memories")
    user_id: str
    project_id: str | None = None
    status: MemoryStatus | None = None
    type: MemoryType | None = None
    subject: str | None = None
    q: str | None = None
    limit: int | None = None
    cursor: str | None = None
    as_of: datetime | None = None  # the memories current at this instant (timezone-aware)
    as_of_kind: AsOfKind | None = None  # default valid
    agent_id: str | None = None  # what that agent reads: its own, the user's and its spaces'


class GetMemory(Request[Memory]):
    """One memory by id (404 if it is not this tenant's)."""

    route = Route("GET", "/v1/memories/{memory_id}")
    memory_id: Id


class UpdateMemory(Request[Memory]):
    """Change some fields of a memory; a content change re-embeds it. `subject=None` clears the slot."""

    route = Route("PATCH", "/v1/memories/{memory_id}")
    memory_id: Id
    content: str | Unset = UNSET
    type: MemoryType | Unset = UNSET
    subject: str | Unset | None = UNSET
    importance: float | Unset = UNSET
    confidence: float | Unset = UNSET
    privacy: Privacy | Unset = UNSET
    tags: list[str] | Unset = UNSET
    expires_at: datetime | Unset | None = UNSET


class PinMemory(Request[Memory]):
    """Pin a memory: it ranks first in recall and cannot be superseded without approval."""

    route = Route("POST", "/v1/memories/{memory_id}/pin")
    memory_id: Id


class UnpinMemory(Request[Memory]):
    """Unpin a memory."""

    route = Route("POST", "/v1/memories/{memory_id}/unpin")
    memory_id: Id


class ArchiveMemory(Request[Memory]):
    """Archive a memory: kept, but no longer recalled."""

    route = Route("POST", "/v1/memories/{memory_id}/archive")
    memory_id: Id


class RestoreMemory(Request[Memory]):
    """Make an archived, expired or forgotten memory active again."""

    route = Route("POST", "/v1/memories/{memory_id}/restore")
    memory_id: Id


class DeleteMemory(Request[Forgotten]):
    """Forget a memory (soft: excluded everywhere, its audit trail kept)."""

    route = Route("DELETE", "/v1/memories/{memory_id}")
    memory_id: Id


class EraseMemory(Request[EraseReceipt]):
    """Erase a memory for good (hard: content, vector and event details removed); returns a receipt."""

    route = Route("DELETE", "/v1/memories/{memory_id}", query=(("erase", "true"),))
    memory_id: Id


class GetHistory(Request[History]):
    """A memory's slot chain (newest first) and its events: what replaced what, and why."""

    route = Route("GET", "/v1/memories/{memory_id}/history")
    memory_id: Id
    as_of: datetime | None = None  # the chain as it stood at this instant, and which version was current
    as_of_kind: AsOfKind | None = None  # default valid


# --- recall and forget --------------------------------------------------------------------------------


class Recall(Request[RecallResult]):
    """The memories that fit a token budget for a query, the rendered context and the trace of why."""

    route = Route("POST", "/v1/recall")
    user_id: str
    query: str
    project_id: str | None = None
    token_budget: int | None = None
    types: list[MemoryType] | None = None
    prefer_type: MemoryType | None = None
    min_relevance: float | None = None
    include_sensitive: bool | None = None
    explain: bool | None = None
    as_of: datetime | None = None  # recall what was current at this instant (timezone-aware)
    as_of_kind: AsOfKind | None = None  # valid (default) or recorded
    agent_id: str | None = None  # this agent's, the user's agent-less and its granted spaces' memories


class ForgetFilter(msgspec.Struct, omit_defaults=True):
    """Which memories `forget(filter=...)` retires: all given conditions must hold."""

    older_than_days: float | None = None
    salience_below: float | None = None
    decayed_below: float | None = None
    type: MemoryType | None = None


class Forget(Request[Forgotten]):
    """Forget (soft) by exactly one of: memory id, query (the closest memory), subject, or filter."""

    route = Route("POST", "/v1/forget")
    user_id: str
    project_id: str | None = None
    memory_id: Id | None = None
    query: str | None = None
    subject: str | None = None
    filter: ForgetFilter | None = None
    agent_id: str | None = None  # only that agent's own memories and the user's agent-less ones


class GetStats(Request[Stats]):
    """Counts by status and type, and rows embedded by another model (`mismatched`)."""

    route = Route("GET", "/v1/stats")
    user_id: str | None = None


class GetTimeline(Request[EventPage]):
    """One page of a user's memory events, newest first."""

    route = Route("GET", "/v1/timeline")
    user_id: str
    project_id: str | None = None
    limit: int | None = None
    cursor: str | None = None


# --- agent --------------------------------------------------------------------------------------------


class Chat(Request[ChatResult]):
    """One agent turn: the model recalls, remembers and forgets through tools, then answers."""

    route = Route("POST", "/v1/chat")
    user_id: str
    message: str
    session_id: str | None = None
    project_id: str | None = None
    token_budget: int | None = None
    agent_id: str | None = None  # the agent this chat is: its tools read and write as that agent


class Message(msgspec.Struct):
    role: Role
    content: str


class Extract(Request[ExtractResult]):
    """Turn conversation messages into created, superseded and forgotten memories."""

    route = Route("POST", "/v1/memories/extract")
    user_id: str
    messages: list[Message]
    project_id: str | None = None
    session_id: str | None = None


class GetUsage(Request[Usage]):
    """Model calls and tokens, in total, by model and by kind, optionally in `[since, until)`."""

    route = Route("GET", "/v1/usage")
    since: datetime | None = None
    until: datetime | None = None
    user_id: str | None = None


class GetUsageSeries(Request[UsageSeries]):
    """Tokens per model and kind in `bucket`-wide buckets from `since` to `until` (buckets with calls)."""

    route = Route("GET", "/v1/usage/series")
    since: datetime
    until: datetime
    bucket: str | None = None  # minute | hour (default) | day
    user_id: str | None = None


# --- directory ----------------------------------------------------------------------------------------


class ListUsers(Request[UserPage]):
    """The tenant's user ids (those with a stored memory), in order, with their memory counts."""

    route = Route("GET", "/v1/users")
    limit: int | None = None
    cursor: str | None = None


class ListProjects(Request[ProjectPage]):
    """A user's project ids, in order, with their memory counts."""

    route = Route("GET", "/v1/projects")
    user_id: str
    limit: int | None = None
    cursor: str | None = None


# --- portability and privacy --------------------------------------------------------------------------


class Export(Request[ExportDocument]):
    """Every memory of a user (or the whole tenant) with vectors, events and proposals."""

    route = Route("GET", "/v1/export", query=(("format", "json"),))
    user_id: str | None = None
    project_id: str | None = None


class ExportMarkdown(Request[str]):
    """The same export as a readable Markdown document (grouped by type, superseded struck through)."""

    route = Route("GET", "/v1/export", query=(("format", "markdown"),))
    user_id: str | None = None
    project_id: str | None = None


class ImportDocument(Request[ImportResult]):
    """Import an export document (a struct from `export()` or its JSON bytes); all or nothing."""

    route = Route("POST", "/v1/import", raw_body="document")
    document: ExportDocument | bytes


class Reembed(Request[ReembedResult]):
    """Re-embed up to `limit` memories whose vector is another model's."""

    route = Route("POST", "/v1/reembed")
    user_id: str | None = None
    limit: int | None = None


class EraseUser(Request[EraseReceipt]):
    """Erase everything of a user (or of one of their projects) for good; returns the receipt."""

    route = Route("POST", "/v1/users/{user_id}/erase")
    user_id: str
    project_id: str | None = None


class Erase(Request[EraseReceipt]):
    """The same erase with the user id in the body: for ids a URL path cannot carry (`/`)."""

    route = Route("POST", "/v1/erase")
    user_id: str
    project_id: str | None = None


# --- dreaming -----------------------------------------------------------------------------------------


class Dream(Request[DreamResult]):
    """Propose consolidations (merge, forget, resalience, supersede); nothing changes until applied."""

    route = Route("POST", "/v1/dream")
    user_id: str
    project_id: str | None = None


class ListProposals(Request[ProposalPage]):
    """One page of a user's dream proposals, optionally by status."""

    route = Route("GET", "/v1/dream/proposals")
    user_id: str
    status: ProposalStatus | None = None
    project_id: str | None = None
    limit: int | None = None
    cursor: str | None = None


class ApproveProposal(Request[Proposal]):
    """Approve a proposal (it is applied by `apply_proposals`)."""

    route = Route("POST", "/v1/dream/proposals/{proposal_id}/approve")
    proposal_id: Id


class RejectProposal(Request[Proposal]):
    """Reject a proposal."""

    route = Route("POST", "/v1/dream/proposals/{proposal_id}/reject")
    proposal_id: Id


class ApplyProposals(Request[ApplyResult]):
    """Apply approved proposals (of a user, or these ids) in one transaction; changed targets go stale."""

    route = Route("POST", "/v1/dream/apply")
    user_id: str | None = None
    proposal_ids: list[Id] | None = None


# --- service ------------------------------------------------------------------------------------------


class GetHealth(Request[Health]):
    """Liveness: the process answers."""

    route = Route("GET", "/health")


class GetReady(Request[Readiness]):
    """Readiness: database reachable and migrations current (a 503 is an answer here, not an error)."""

    route = Route("GET", "/ready", accept=frozenset({200, 503}))


# --- change events --------------------------------------------------------------------------------------


class CreateWebhook(Request[WebhookCreated]):
    """Send this tenant's change events to `url`, signed; the secret is in the answer, once."""

    route = Route("POST", "/v1/webhooks")
    url: str
    description: str | None = None
    event_types: list[str] | None = None  # event kinds (`created`, `forgotten`, ...); none: every kind


class ListWebhooks(Request[WebhookList]):
    """The tenant's webhooks (never their secrets)."""

    route = Route("GET", "/v1/webhooks")


class DeleteWebhook(Request[Webhook]):
    """Delete a webhook and what it still had to deliver."""

    route = Route("DELETE", "/v1/webhooks/{webhook_id}")
    webhook_id: Id


class ListDeadLetters(Request[DeliveryPage]):
    """Deliveries that failed every attempt, newest first (of one webhook, or all)."""

    route = Route("GET", "/v1/webhooks/dead-letters")
    webhook_id: Id | None = None
    limit: int | None = None
    cursor: str | None = None


class Redeliver(Request[Delivery]):
    """Queue a dead letter again with a fresh set of attempts (the same event id)."""

    route = Route("POST", "/v1/webhooks/dead-letters/{delivery_id}/redeliver")
    delivery_id: int


class StreamEvents(Request[ChangeEvent]):
    """The tenant's change events as they happen (server-sent events), after event `after` if given."""

    route = Route("GET", "/v1/events/stream")
    user_id: str | None = None
    after: int | None = None


# --- shared spaces --------------------------------------------------------------------------------------


class CreateSpace(Request[Space]):
    """A shared space (a team or a project) of the tenant; `auto_approve`: promotions need no person."""

    route = Route("POST", "/v1/spaces")
    name: str
    description: str | None = None
    auto_approve: bool | None = None


class ListSpaces(Request[SpaceList]):
    """The tenant's spaces, each with the agents granted on it."""

    route = Route("GET", "/v1/spaces")


class GrantSpace(Request[SpaceGrant]):
    """Let an agent read a space (and, unless `can_propose=False`, propose promotions into it)."""

    route = Route("POST", "/v1/spaces/{space}/grants")
    space: str
    agent_id: str
    can_propose: bool | None = None


class RevokeSpace(Request[SpaceGrant]):
    """Take an agent's grant on a space away; returns the revoked grant."""

    route = Route("DELETE", "/v1/spaces/{space}/grants/{agent_id}")
    space: str
    agent_id: str


class ProposePromotion(Request[Proposal]):
    """Propose a memory for a space: pending until `approve_proposal` (at once if the space auto-approves)."""

    route = Route("POST", "/v1/spaces/{space}/promotions")
    space: str
    memory_id: Id
    agent_id: str

"""Is an approved proposal still sound right now? (pure; `apply` marks it `stale` when not)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from app.db.models import DreamProposal, Memory
from app.memory.fingerprint import fingerprint
from app.vocabulary import LIVE_STATUSES, MemoryType, ProposalKind


def _payload_problem(kind: str, payload: Mapping[str, Any], target_ids: list[uuid.UUID]) -> str | None:
    if kind == ProposalKind.MERGE:
        content, importance = payload.get("content"), payload.get("importance")
        if not isinstance(content, str) or not content.strip():
            return "the merge has no content"
        if MemoryType.of(payload.get("type")) is None:
            return "the merge has no valid type"
        if not isinstance(importance, int | float) or not 0 <= importance <= 1:
            return "the merge has no valid importance"
        if len(target_ids) < 2:
            return "a merge needs two memories"
    elif kind == ProposalKind.RESALIENCE:
        salience = payload.get("salience")
        if not isinstance(salience, int | float) or not 0 <= salience <= 1:
            return "the resalience has no valid salience"
    elif kind == ProposalKind.SUPERSEDE:
        pair = {str(i) for i in target_ids}
        old, new = payload.get("superseded"), payload.get("successor")
        if old == new or old not in pair or new not in pair:
            return "the supersede does not name its two memories"
    return None


def stale_reason(proposal: DreamProposal, targets: Mapping[uuid.UUID, Memory], now: datetime) -> str | None:
    """Why the proposal can no longer be applied as approved, or None when it can.

    Every target must still exist, belong to the proposal's user, be live and unexpired, and match the
    fingerprint taken when the proposal was made (proposals without one are checked for liveness only).
    """
    payload: Mapping[str, Any] = proposal.payload if isinstance(proposal.payload, dict) else {}
    prints = payload.get("fingerprint")
    if not proposal.target_ids:
        return "the proposal names no memory"
    for tid in proposal.target_ids:
        memory = targets.get(tid)
        if memory is None or memory.user_id != proposal.user_id:
            return f"memory {tid} no longer exists"
        if memory.status not in LIVE_STATUSES:
            return f"memory {tid} is {memory.status} now"
        if memory.expires_at is not None and memory.expires_at <= now:
            return f"memory {tid} has expired"
        if isinstance(prints, dict) and prints.get(str(tid)) != fingerprint(memory):
            return f"memory {tid} changed after the proposal was made"
    if proposal.kind == ProposalKind.MERGE and len({targets[t].agent_id for t in proposal.target_ids}) > 1:
        return "the memories belong to different agents: merging them would share a private memory"
    return _payload_problem(proposal.kind, payload, list(proposal.target_ids))

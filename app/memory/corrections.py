"""Supersession on the model's word: a correction names the value it replaces ("from matcha to espresso").

When the old fact has no slot in common with the new one, neither exact-slot nor semantic supersession
can see the link; the model (or the offline rules) can. The replaced memory must mention that value,
belong to the same user and be live; pinned memories and critical rules still go to a human instead.
"""

from __future__ import annotations

from app.context import RequestContext
from app.db.models import Memory
from app.memory.retire import retire
from app.vocabulary import ProposalKind, Scope, SupersedeRule, is_protected

MIN_VALUE_CHARS = 3


async def supersede_mentioned(ctx: RequestContext, new: Memory, previous_value: str) -> Memory | None:
    """Retire the newest live memory that mentions `previous_value`; returns it (or None)."""
    value = previous_value.strip()
    if len(value) < MIN_VALUE_CHARS or value.lower() in new.content.lower():
        return None  # too vague, or the new fact still states the old value: not a replacement
    user = Scope.of_user(ctx.tenant, new.user_id, None)
    candidates = await ctx.store.writes.live_mentioning(user, value, exclude=new.id)
    # An agent's correction replaces only its own memory (its slots are its own, as in the write path).
    old = next(
        (
            m
            for m in candidates
            if m.project_id in (None, new.project_id) and (new.agent_id is None or m.agent_id == new.agent_id)
        ),
        None,
    )
    if old is None:
        return None
    if is_protected(old.status, old.type):
        ctx.store.proposals.add(
            Scope(ctx.tenant, new.user_id, new.project_id),
            kind=ProposalKind.SUPERSEDE,
            target_ids=[old.id, new.id],
            payload={"superseded": str(old.id), "successor": str(new.id), "rule": SupersedeRule.MODEL},
            rationale=f"the model says this replaces '{value}', but that memory is pinned or a critical rule",
            model=new.source_model,
        )
        await ctx.store.flush()
        return None
    event = retire(
        old,
        new,
        rule=SupersedeRule.MODEL,
        reason=f"{SupersedeRule.MODEL}: a correction replaced '{value}'",
        now=ctx.clock.now(),
        extra={"model": new.source_model},
    )
    await ctx.store.flush()
    await ctx.store.events.record(event)
    return old

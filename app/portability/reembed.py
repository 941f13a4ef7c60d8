"""Re-embed: give every row whose vector is not the configured model's a new one, batch by batch.

A row is "mismatched" while its `embed_model` differs from the configured embedder's (or it has no
vector); recall never ranks it by cosine then (keyword ranking still finds it). Batches are
independent, so a run that stops half-way resumes where it stopped: healed rows no longer match.
The column is an unconstrained `vector`, so the new model may have another dimension. The passages of
long memories (migration 0012) are remade with their memory's vector, and for memories whose vector is
current but whose passages are missing or stale (written before passages existed, or under another
`ENGRAM_PASSAGE_TOKENS`).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.context import RequestContext
from app.lib.tokens import content_tokens
from app.memory.passage_index import PassageIndex
from app.store.events import NewEvent
from app.store.portability import PortabilityStore
from app.vocabulary import EventKind


@dataclass(frozen=True, slots=True)
class ReembedResult:
    reembedded: int
    remaining: int


class Reembedder:
    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.repo = PortabilityStore(ctx.session, ctx.tenant)

    async def remaining(self, user_id: str | None) -> int:
        return await self.repo.count_mismatched(
            self.ctx.embedder.name, user_id, self.ctx.policy.passage_tokens
        )

    async def batch(self, user_id: str | None, size: int) -> int:
        """Re-embed up to `size` rows in the current transaction, and remake their passages; returns how
        many. A row whose vector is current but whose passages are not (written before passages existed,
        or under another passage size) keeps its vector and gets its passages."""
        embedder = self.ctx.embedder
        rows = await self.repo.mismatched_batch(embedder.name, user_id, size, self.ctx.policy.passage_tokens)
        if not rows:
            return 0
        stale = [m for m in rows if m.embed_model != embedder.name or m.embedding is None]
        index = PassageIndex(self.ctx)
        # A long memory's passages are embedded with its content (the local model pools them from the
        # content's own pass), not by a second pass over the same words in `rebuild`.
        embedded = await index.embed_many([m.content for m in stale])
        events = []
        for memory, (_, vectors) in zip(stale, embedded, strict=True):
            details = {"from": memory.embed_model, "to": embedder.name}
            memory.embedding = vectors.vector
            memory.embed_model = embedder.name
            events.append(NewEvent.about(memory, EventKind.REEMBEDDED, "embed model changed", details))
        for memory in rows:
            if memory.content_tokens is None:  # written before 0007: counted now, so it is not picked again
                memory.content_tokens = content_tokens(memory.content)
        await self.ctx.store.flush()
        await index.rebuild(rows, embedded={m.id: e for m, e in zip(stale, embedded, strict=True)})
        await self.ctx.store.events.record(*events)
        return len(rows)

    async def run(self, user_id: str | None, limit: int) -> ReembedResult:
        """Up to `limit` rows in batches of the configured size, all in the caller's transaction."""
        size = self.ctx.settings.reembed_batch_size
        done = 0
        while done < limit:
            count = await self.batch(user_id, min(size, limit - done))
            if count == 0:
                break
            done += count
        return ReembedResult(reembedded=done, remaining=await self.remaining(user_id))

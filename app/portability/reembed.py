"""Re-embed: give every row whose vector is not the configured model's a new one, batch by batch.

A row is "mismatched" while its `embed_model` differs from the configured embedder's (or it has no
vector); recall never ranks it by cosine then (keyword ranking still finds it). Batches are
independent, so a run that stops half-way resumes where it stopped: healed rows no longer match.
The column is an unconstrained `vector`, so the new model may have another dimension.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.memory.context import MemoryDeps
from app.portability.repository import PortabilityRepository
from app.vocabulary import EventKind


@dataclass(frozen=True, slots=True)
class ReembedResult:
    reembedded: int
    remaining: int


class Reembedder:
    def __init__(self, deps: MemoryDeps, actor: str) -> None:
        self.deps = deps
        self.repo = PortabilityRepository(deps.repo.session, deps.repo.tenant)
        self.actor = actor

    async def remaining(self, user_id: str | None) -> int:
        return await self.repo.count_mismatched(self.deps.embedder.name, user_id)

    async def batch(self, user_id: str | None, size: int) -> int:
        """Re-embed up to `size` rows in the current transaction; returns how many."""
        embedder = self.deps.embedder
        rows = await self.repo.mismatched_batch(embedder.name, user_id, size)
        if not rows:
            return 0
        vectors = await embedder.embed([m.content for m in rows])
        for memory, vector in zip(rows, vectors, strict=True):
            previous = memory.embed_model
            memory.embedding = vector
            memory.embed_model = embedder.name
            self.deps.repo.add_event(
                memory_id=memory.id,
                user_id=memory.user_id,
                project_id=memory.project_id,
                kind=EventKind.REEMBEDDED,
                actor=self.actor,
                reason="embed model changed",
                details={"from": previous, "to": embedder.name},
            )
        await self.deps.repo.flush()
        return len(rows)

    async def run(self, user_id: str | None, limit: int) -> ReembedResult:
        """Up to `limit` rows in batches of the configured size, all in the caller's transaction."""
        size = self.deps.settings.reembed_batch_size
        done = 0
        while done < limit:
            count = await self.batch(user_id, min(size, limit - done))
            if count == 0:
                break
            done += count
        return ReembedResult(reembedded=done, remaining=await self.remaining(user_id))

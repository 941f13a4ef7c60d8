"""Keeps every long memory's passages right, in the transaction that writes its content.

The write path plans a memory's passages (`plan`, pure) before its one embedding call, so the passages
are embedded with the content (`embed_planned`; the local model pools them from the content's own
forward pass, app/embeddings/spans.py); `PassageIndex.add` stores them once the memories are flushed. Wherever
else content or vectors change (an edit of the content, a dream merge, an import, a re-embed),
`PassageIndex.rebuild` plans, embeds and replaces them. An edit of the subject alone remakes their
tsvectors (`PassageIndex.retext`): the subject is part of every passage's words, as of its memory's.
Erase needs nothing: passages go with their memory (on delete cascade).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.context import RequestContext
from app.db.models import Memory
from app.embeddings.base import Embedder, Spanned, SpanVectors
from app.memory.passages import Span, Tokens, excerpt_tokens, split
from app.store.passages import NewPassage, PassageStore


@dataclass(frozen=True, slots=True)
class Planned:
    """A content's passages before they are embedded (none: the content is not long)."""

    content: str
    spans: list[Span]
    tokens: list[int]

    @property
    def spanned(self) -> Spanned:
        """What the embedder is given: the content and its passages' character spans."""
        return Spanned(self.content, tuple((span.start, span.end) for span in self.spans))

    def passages(self, memory_id: uuid.UUID, vectors: Sequence[Sequence[float]]) -> list[NewPassage]:
        return [
            NewPassage(memory_id, i, span.start, span.end, tokens, vector)
            for i, (span, tokens, vector) in enumerate(zip(self.spans, self.tokens, vectors, strict=True))
        ]


def plan(content: str, max_tokens: int, tokens: Tokens) -> Planned:
    """The passages `content` gets under a passage size of `max_tokens` (0: none)."""
    spans = split(content, max_tokens, tokens) if max_tokens > 0 else []
    return Planned(content, spans, excerpt_tokens(content, spans, tokens.count))


async def embed_planned(embedder: Embedder, plans: Sequence[Planned]) -> list[SpanVectors]:
    """The contents' vectors and their passages': one call. Without a passage among them it is a plain
    `embed` (which a query cache and concurrent queries' batches share); with one, `embed_spans`, where
    the local model pools the passages from the content's own pass."""
    if any(planned.spans for planned in plans):
        return await embedder.embed_spans([planned.spanned for planned in plans])
    return [SpanVectors(vector, []) for vector in await embedder.embed([p.content for p in plans])]


class PassageIndex:
    """Writes and rebuilds the passages of one tenant's memories."""

    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.store = PassageStore(ctx.session, ctx.tenant)

    def plan(self, content: str) -> Planned:
        return plan(content, self.ctx.policy.passage_tokens, self.ctx.counter)

    async def embed(self, content: str) -> tuple[list[float], Planned, list[list[float]]]:
        """One content's vector, its planned passages and theirs: one embedding call."""
        planned = self.plan(content)
        [embedded] = await embed_planned(self.ctx.embedder, [planned])
        return embedded.vector, planned, embedded.spans

    async def add(self, written: Sequence[tuple[Memory, Planned, Sequence[Sequence[float]]]]) -> None:
        """Store the passages of new memories (flushed), embedded with their content: one statement."""
        passages = [p for memory, planned, vectors in written for p in planned.passages(memory.id, vectors)]
        if passages:
            await self.store.add(passages, self.ctx.embedder.name)

    async def embed_many(self, contents: Sequence[str]) -> list[tuple[Planned, SpanVectors]]:
        """Several contents' plans, each with its vector and its passages': one embedding call."""
        plans = [self.plan(content) for content in contents]
        embedded = await embed_planned(self.ctx.embedder, plans) if plans else []
        return list(zip(plans, embedded, strict=True))

    async def rebuild(
        self,
        memories: Sequence[Memory],
        *,
        new: bool = False,
        embedded: Mapping[uuid.UUID, tuple[Planned, SpanVectors]] | None = None,
    ) -> int:
        """Plan, embed (one call) and replace the passages of memories whose content or vectors were
        just written (flushed; `new`: inserted by this transaction, so they have none yet); returns how
        many passages they now have. A memory in `embedded` (`embed_many`'s, keyed by its id) has its
        passages' vectors already: its content is not run through the model again."""
        given = embedded or {}
        long = [
            (memory, planned)
            for memory in memories
            if memory.id not in given and (planned := self.plan(memory.content)).spans
        ]
        fresh = await embed_planned(self.ctx.embedder, [planned for _, planned in long]) if long else []
        ready = [(memory, *given[memory.id]) for memory in memories if memory.id in given]
        passages = [
            p
            for memory, planned, vectors in [
                *ready,
                *((m, pl, v) for (m, pl), v in zip(long, fresh, strict=True)),
            ]
            for p in planned.passages(memory.id, vectors.spans)
        ]
        await self.store.replace([] if new else [m.id for m in memories], passages, self.ctx.embedder.name)
        return len(passages)

    async def retext(self, memory_ids: Sequence[uuid.UUID]) -> None:
        """Remake the passages' words after a change of their memories' subject (flushed)."""
        await self.store.refresh_text(memory_ids)

"""The read path (DESIGN.md): scoped SQL candidates, Python scoring, slot veto, token packing,
one-statement reinforce, and a trace of every decision."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.spare import sees_same_rows
from app.lib.errors import ValidationFailed
from app.lib.metrics import observe_recall
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter
from app.memory.context import MemoryDeps
from app.memory.lines import line_body, line_prefix
from app.memory.models import RecalledMemory, RecallInput, RecallResult, SkippedMemory
from app.memory.packing import PackItem, pack
from app.memory.repository import CandidateRow, MemoryRepository, Scope, or_tsquery
from app.memory.scoring import score
from app.memory.types import MemoryType

MAX_BUDGET = 32768
PREFER_TYPE_BONUS = 0.10


def _check(request: RecallInput) -> None:
    if not request.user_id.strip():
        raise ValidationFailed("user_id must not be empty")
    if not request.query.strip():
        raise ValidationFailed("query must not be empty")
    if request.token_budget is not None and not 1 <= request.token_budget <= MAX_BUDGET:
        raise ValidationFailed(f"token_budget must be between 1 and {MAX_BUDGET}")
    valid = set(MemoryType)
    for name in [*(request.types or []), *([request.prefer_type] if request.prefer_type else [])]:
        if name not in valid:
            raise ValidationFailed(f"unknown memory type {name!r}")
    if request.min_relevance is not None and not 0.0 <= request.min_relevance <= 1.0:
        raise ValidationFailed("min_relevance must be between 0 and 1")


class Recaller:
    """Answers one recall request."""

    def __init__(self, deps: MemoryDeps) -> None:
        self.deps = deps

    def _keywords_apart(
        self,
        scope: Scope,
        vector: Sequence[float],
        tsquery: str | None,
        now: datetime,
        size: int,
        into: Candidates,
    ) -> tuple[KeywordQuery, asyncio.Task[list[CandidateRow] | None]] | None:
        """Start the text half on a spare connection when the scope is large enough for it to pay and
        one is free; None: it runs in the candidate statement. Its rows are added to `into` as soon as
        they arrive, so they are scored while the cosine half is still running."""
        deps = self.deps
        if not tsquery or deps.spare is None or size < deps.settings.spare_keyword_min_rows:
            return None
        if not sees_same_rows(deps.repo.session):
            return None  # this transaction wrote rows that no other connection sees yet
        keywords = KeywordQuery(scope, vector, deps.embedder.name, tsquery, deps.settings, now)

        async def read(session: AsyncSession) -> list[CandidateRow]:
            matched = await keywords.run(session)
            into.add(matched)
            return matched

        task = deps.spare.start(scope.tenant, read)
        return None if task is None else (keywords, task)

    async def recall(self, request: RecallInput) -> RecallResult:
        _check(request)
        deps, settings = self.deps, self.deps.settings
        latency: dict[str, float] = {}
        started = time.perf_counter()
        [vector] = await deps.embedder.embed([request.query])
        latency["embed"] = _ms(started)

        mark = time.perf_counter()
        now = deps.clock.now()
        scope = Scope(deps.repo.tenant, request.user_id, request.project_id)
        use_index, size = await deps.scope_sizes.plan(
            deps.repo, scope, now, settings.exact_scan_max_rows, settings.hnsw_min_share
        )
        tsquery = or_tsquery(request.query)
        candidates = Candidates(request, settings, deps.counter, now)
        apart = self._keywords_apart(scope, vector, tsquery, now, size, candidates)
        try:
            rows = await deps.repo.candidates(
                scope,
                embedding=vector,
                embed_model=deps.embedder.name,
                dim=deps.embedder.dim,
                tsquery=tsquery if apart is None else None,  # else the spare connection reads it
                k=settings.candidate_k,
                now=now,
                use_index=use_index,
                single_pass=size <= settings.single_pass_max_rows,
                keyword_cap=settings.keyword_max_matches,
                ef_search=settings.hnsw_ef_search,
            )
            if apart is not None:
                keywords, task = apart
                if await task is None:  # the spare read failed: read the text half here after all
                    candidates.add(await keywords.run(deps.repo.session))
        finally:
            if apart is not None and not apart[1].done():
                apart[1].cancel()
        latency["sql"] = _ms(mark)

        mark = time.perf_counter()
        candidates.add(rows)  # after the text half's rows: a row both halves found keeps its keyword rank
        items = candidates.items()
        latency["score"] = _ms(mark)

        mark = time.perf_counter()
        budget = request.token_budget or settings.default_token_budget
        floor = request.min_relevance if request.min_relevance is not None else deps.relevance_floor()
        packed = pack(
            items,
            budget=budget,
            min_relevance=floor,
            count_tokens=deps.counter.count,
            at_least=deps.counter.at_least,
        )
        latency["pack"] = _ms(mark)

        mark = time.perf_counter()
        packed_ids = [inc.item.ref.id for inc in packed.included]
        if deps.reinforcements is not None:
            deps.reinforcements.note(deps.repo.tenant, packed_ids, now)  # written in the background
        else:
            await deps.repo.reinforce(packed_ids, now)
        latency["reinforce"] = _ms(mark)
        latency["total"] = _ms(started)
        observe_recall(
            latency,
            candidates=candidates.count,
            memories=len(packed.included),
            tokens_used=packed.tokens_used,
            plan="hnsw" if use_index else "exact",
        )

        memories = [
            RecalledMemory(
                memory=inc.item.ref.memory(),
                score=inc.item.score,
                relevance=inc.item.relevance,
                components=candidates.components[inc.item.ref.id],
                tokens=inc.tokens,
            )
            for inc in packed.included
        ]
        skipped = [SkippedMemory(s.item.ref.id, s.reason, s.item.score) for s in packed.skipped]
        return RecallResult(
            context=packed.context,
            token_budget=budget,
            tokens_used=packed.tokens_used,
            memories=memories,
            skipped=skipped,
            candidates=candidates.count,
            plan="hnsw" if use_index else "exact",
            min_relevance=floor,
            latency_ms=latency,
        )


@dataclass(frozen=True, slots=True)
class KeywordQuery:
    """Recall's text half as a read of its own, for a spare connection (`SpareReads`)."""

    scope: Scope
    vector: Sequence[float]
    embed_model: str
    tsquery: str
    settings: Settings
    now: datetime

    async def run(self, session: AsyncSession) -> list[CandidateRow]:
        return await MemoryRepository(session, self.scope.tenant).keyword_candidates(
            self.scope,
            embedding=self.vector,
            embed_model=self.embed_model,
            tsquery=self.tsquery,
            k=self.settings.candidate_k,
            now=self.now,
            keyword_cap=self.settings.keyword_max_matches,
        )


class Candidates:
    """Recall's candidates, each scored and rendered into a pack item once, as its half arrives.

    The first row seen of a memory is kept: the text half's rows are added first (they carry the
    keyword rank; the cosine half's rows carry 0 when the text half was read apart).
    """

    def __init__(self, request: RecallInput, settings: Settings, counter: TokenCounter, now: datetime):
        self.request, self.settings, self.counter, self.now = request, settings, counter, now
        self.wanted_types = set(request.types) if request.types else None
        self.components: dict[uuid.UUID, dict[str, float]] = {}
        self._items: list[PackItem[CandidateRow]] = []
        self._seen: set[uuid.UUID] = set()

    @property
    def count(self) -> int:
        """Distinct candidates loaded, before the type and privacy filters."""
        return len(self._seen)

    def add(self, rows: Sequence[CandidateRow]) -> None:
        request, settings = self.request, self.settings
        for m in rows:
            if m.id in self._seen:
                continue
            self._seen.add(m.id)
            if self.wanted_types is not None and m.type not in self.wanted_types:
                continue
            if m.privacy == "sensitive" and not request.include_sensitive:
                continue
            s = score(
                m,
                now=self.now,
                weights=settings.weights,
                half_lives=settings.half_lives,
                type_priors=settings.type_priors,
                recency_half_life_days=settings.recency_half_life_days,
                keyword_saturation=settings.keyword_saturation,
                project_id=request.project_id,
            )
            self.components[m.id] = s.components
            prefix = line_prefix(m)
            self._items.append(
                PackItem(
                    ref=m,
                    line=prefix + line_body(m.content),
                    score=s.score + (PREFER_TYPE_BONUS if request.prefer_type == m.type else 0.0),
                    relevance=s.relevance,
                    always=m.pinned or m.type == MemoryType.CRITICAL_RULE,
                    slot=(m.subject, m.type) if m.subject is not None else None,
                    content_hash=m.content_hash,
                    valid_from=m.valid_from,
                    tokens=None
                    if m.content_tokens is None
                    else self.counter.count(prefix) + m.content_tokens,
                )
            )

    def items(self) -> list[PackItem[CandidateRow]]:
        """In a fixed order (newest first, then content, then id), whichever half arrived first, so equal
        scores pack the same way every time."""
        return sorted(self._items, key=lambda i: (i.valid_from, i.content_hash, i.ref.id.bytes), reverse=True)


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)

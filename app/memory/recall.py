"""The read path (DESIGN.md): scoped SQL candidates, Python scoring, slot veto, token packing,
reinforcement in the background, and a trace of every decision."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.context import RequestContext
from app.db.spare import sees_same_rows
from app.language.tense import asks_about_past
from app.lib.errors import ValidationFailed
from app.lib.logging import get_logger
from app.lib.metrics import observe_recall
from app.lib.validation import check_time
from app.memory.candidate_set import Candidates
from app.memory.models import PassageShown, RecalledMemory, RecallInput, RecallResult, SkippedMemory
from app.memory.packing import Packed, PackItem, pack
from app.store.bm25 import TextStats
from app.store.candidates import CandidateQuery, CandidateRow, KeywordScores, RecallStore, or_tsquery
from app.vocabulary import Moment, Reach, Scope

log = get_logger("engram.recall")

MAX_BUDGET = 32768
Latency = dict[str, float]


def _check(request: RecallInput) -> None:
    if not request.user_id.strip():
        raise ValidationFailed("user_id must not be empty")
    if not request.query.strip():
        raise ValidationFailed("query must not be empty")
    if request.token_budget is not None and not 1 <= request.token_budget <= MAX_BUDGET:
        raise ValidationFailed(f"token_budget must be between 1 and {MAX_BUDGET}")
    if request.min_relevance is not None and not 0.0 <= request.min_relevance <= 1.0:
        raise ValidationFailed("min_relevance must be between 0 and 1")
    check_time("as_of", request.as_of)


def moment_of(request: RecallInput, now: datetime) -> Moment:
    """The instant asked about (a future one is now); else the past for a question about it
    (app.language.tense: superseded memories become eligible); else the present."""
    if request.as_of is not None and request.as_of < now:
        return Moment(request.as_of, request.as_of_kind)
    return Moment(past=asks_about_past(request.query))


class Recaller:
    """Answers one recall request."""

    def __init__(self, ctx: RequestContext, *, remembered_stats: bool = True) -> None:
        self.ctx = ctx
        # Whether BM25's statistics of a large scope may be the minute-old ones `ScopeSizes` remembers
        # (recall's speed); forget-by-query counts them afresh and leaves no statistics remembered (its
        # scope's size may be, a plan hint).
        self.remembered_stats = remembered_stats

    async def recall(self, request: RecallInput) -> RecallResult:
        _check(request)
        ctx = self.ctx
        latency: Latency = {}
        started = time.perf_counter()
        now = ctx.clock.now()
        moment = moment_of(request, now)
        candidates, items, use_index = await self._scored(request, now, moment, latency)

        mark = time.perf_counter()
        budget = request.token_budget or ctx.settings.default_token_budget
        floor = request.min_relevance if request.min_relevance is not None else ctx.relevance_floor()
        packed = self._pack(items, budget, floor)
        latency["pack"] = _ms(mark)

        mark = time.perf_counter()
        # A superseded memory recalled for the past is not a use of what is current: not reinforced.
        await self._reinforce([i.item.ref.id for i in packed.included if not i.item.ref.superseded], now)
        latency["reinforce"] = _ms(mark)
        latency["total"] = _ms(started)
        plan = "hnsw" if use_index else "exact"
        observe_recall(
            latency,
            candidates=candidates.count,
            memories=len(packed.included),
            tokens_used=packed.tokens_used,
            plan=plan,
        )
        return _result(packed, candidates, budget, floor, plan, latency, moment)

    async def first(
        self, request: RecallInput, min_relevance: float, eligible: Callable[[CandidateRow, float], bool]
    ) -> CandidateRow | None:
        """The `eligible` memory (given its row and relevance) this recall would rank first among those
        whose relevance reaches `min_relevance` (forget-by-query): packed as a recall with that floor and
        the largest budget, so it is one a recall returns, never one that the slot veto or the floor leaves
        out. Nothing is reinforced."""
        _check(request)
        now = self.ctx.clock.now()
        _, items, _ = await self._scored(request, now, moment_of(request, now), {})
        packed = self._pack(items, MAX_BUDGET, min_relevance)
        reached = [
            i.item
            for i in packed.included
            if i.item.relevance >= min_relevance and eligible(i.item.ref, i.item.relevance)
        ]
        return max(reached, key=lambda item: item.score).ref if reached else None

    def _pack(self, items: list[PackItem[CandidateRow]], budget: int, floor: float) -> Packed[CandidateRow]:
        ctx = self.ctx
        return pack(
            items,
            budget=budget,
            min_relevance=floor,
            count_tokens=ctx.counter.count,
            at_least=ctx.counter.at_least,
            standing_share=ctx.policy.standing_share,
            passages_first=ctx.policy.passages_first,
        )

    async def _scored(
        self, request: RecallInput, now: datetime, moment: Moment, latency: Latency
    ) -> tuple[Candidates, list[PackItem[CandidateRow]], bool]:
        """The request's candidates, scored. The scope's plan and BM25's statistics need no vector, so
        they are read while the query is embedded (a local model's few milliseconds, a remote one's
        more), and with a remote model the text half too; `sql` counts the reads' time after the vector
        arrived."""
        ctx = self.ctx
        scope = Scope(
            ctx.tenant,
            request.user_id,
            request.project_id,
            Reach.WITH_GLOBAL,
            agent_id=request.agent_id,
            shared=request.agent_id is not None,
        )
        tsquery = or_tsquery(request.query)
        started = time.perf_counter()
        embedded = asyncio.Event()
        planning = asyncio.create_task(self._plan(scope, tsquery, now, moment, embedded))
        try:
            [vector] = await ctx.embedder.embed([request.query])
            embedded.set()
        except BaseException:
            await asyncio.wait([planning])  # never left reading on the session once the request fails
            failed = None if planning.cancelled() else planning.exception()  # read: never "unretrieved"
            if failed is not None:  # the embedding's error is the request's; this one is only noted
                log.info("recall_plan_failed_with_embedding", error=type(failed).__name__)
            raise
        latency["embed"] = _ms(started)
        mark = time.perf_counter()
        plan = await planning
        return await self._candidates(request, vector, plan, now, moment, latency, mark)

    async def _plan(
        self, scope: Scope, tsquery: str | None, now: datetime, moment: Moment, embedded: asyncio.Event
    ) -> _Plan:
        """What the candidate statement is built for: the scope, its plan, BM25's statistics and the text
        half, from the index of the scope's terms where it answers (`_indexed`). Else the statistics are
        counted and, if a remote model is still embedding the query once they are read, the text half is
        read too (`KeywordReads.keyword_scores`; beside a local model it would compete for the cores)."""
        ctx, settings = self.ctx, self.ctx.settings
        if tsquery and settings.term_index_max_rows > 0 and ctx.terms.wanted(scope):
            indexed = await self._indexed(scope, tsquery, now, moment)
            if indexed is not None:
                return indexed
        stats: TextStats | None = None
        if moment.present and tsquery and self.remembered_stats:  # the statistics count the scope too
            use_index, size, stats = await ctx.scope_sizes.plan_with_stats(
                ctx.store.recall, scope, now, settings.exact_scan_max_rows, settings.hnsw_min_share
            )
        elif moment.as_of is None:
            use_index, size = await ctx.scope_sizes.plan(
                ctx.store.recall, scope, now, settings.exact_scan_max_rows, settings.hnsw_min_share
            )
        else:  # an instant's rows are not the live ones the counts are of: scanned exactly
            use_index, size = False, 0
        if tsquery and stats is None:
            stats = await self._text_stats(scope, now, moment)
        plan = _Plan(scope, tsquery, use_index, size, stats)
        # Whatever the scope's size: where a spare connection would read the text half beside the cosine
        # half, reading it here instead is as fast and keeps every cosine candidate's BM25 (docs/RANKING.md).
        if tsquery and ctx.embedder.remote and not embedded.is_set():
            plan.keywords = await ctx.store.keywords.keyword_scores(self._query(plan, (), now, moment))
        return plan

    async def _indexed(self, scope: Scope, tsquery: str, now: datetime, moment: Moment) -> _Plan | None:
        """The plan with the text half and BM25's statistics from the process's index of the scope's
        terms (app/store/terms.py: the same scores as the statement's, without its pass over every
        match); None when the scope is larger than `term_index_max_rows` or not all read yet."""
        ctx, settings = self.ctx, self.ctx.settings
        query = self._query(_Plan(scope, tsquery, False, 0, None), (), now, moment)
        half = await ctx.store.keywords.text_half(
            ctx.terms, query, settings.term_index_max_rows, settings.term_index_read_tokens, ctx.spare
        )
        if half is None:
            return None
        use_index, size = False, half.listed
        if size > settings.exact_scan_max_rows:
            use_index, size = await ctx.scope_sizes.plan(
                ctx.store.recall, scope, now, settings.exact_scan_max_rows, settings.hnsw_min_share
            )
        keywords = KeywordScores(half.ranks, half.passages, half.ideal, half.top)
        return _Plan(scope, tsquery, use_index, size, half.stats, keywords)

    def _query(self, plan: _Plan, vector: Sequence[float], now: datetime, moment: Moment) -> CandidateQuery:
        ctx, policy = self.ctx, self.ctx.policy
        return CandidateQuery(
            plan.scope,
            vector,
            ctx.embedder.name,
            plan.tsquery,
            policy.candidate_k,
            now,
            policy.keyword_max_matches,
            stats=plan.stats,
            k1=policy.bm25_k1,
            b=policy.bm25_b,
            moment=moment,
            neighbours=policy.neighbour_weight > 0,
            keywords=plan.keywords,
        )

    async def _candidates(
        self,
        request: RecallInput,
        vector: Sequence[float],
        plan: _Plan,
        now: datetime,
        moment: Moment,
        latency: Latency,
        mark: float,
    ) -> tuple[Candidates, list[PackItem[CandidateRow]], bool]:
        """Both halves' rows, scored as they arrive, in packing order; and whether HNSW answered. `mark`:
        when the `sql` stage started (the query's vector arrived)."""
        ctx, settings, policy = self.ctx, self.ctx.settings, self.ctx.policy
        use_index, size = plan.use_index, plan.size
        query = self._query(plan, vector, now, moment)
        candidates = Candidates(
            request, policy, ctx.counter, now, past=moment.past, cosine_floor=ctx.relevance_floor()
        )
        apart = self._keywords_apart(query, size, candidates)
        try:
            rows = await ctx.store.recall.candidates(
                query if apart is None else _without_keywords(query),  # else the spare connection reads it
                dim=ctx.embedder.dim,
                use_index=use_index,
                single_pass=size <= settings.single_pass_max_rows,
                ef_search=settings.hnsw_ef_search,
            )
            if apart is not None and await apart is None:  # the spare read failed: read it here after all
                candidates.add(await ctx.store.recall.keyword_candidates(query))
        finally:
            if apart is not None and not apart.done():
                apart.cancel()
        latency["sql"] = _ms(mark)
        mark = time.perf_counter()
        candidates.add(rows)  # after the text half's rows: a row both halves found keeps its keyword rank
        items = candidates.items()
        latency["score"] = _ms(mark)
        return candidates, items, use_index

    async def _text_stats(self, scope: Scope, now: datetime, moment: Moment) -> TextStats:
        """BM25's statistics over the rows recall reads (the present's may be remembered)."""
        store = self.ctx.store.recall
        if moment.present and self.remembered_stats:
            return await self.ctx.scope_sizes.text_stats(store, scope, now)
        return await store.text_stats(scope, now, moment)

    def _keywords_apart(
        self, query: CandidateQuery, size: int, into: Candidates
    ) -> asyncio.Task[list[CandidateRow] | None] | None:
        """Start the text half on a spare connection when the scope is large enough for it to pay and
        one is free; None: it runs in the candidate statement (or was read ahead). Its rows are added to
        `into` as soon as they arrive, so they are scored while the cosine half is still running."""
        ctx, spare = self.ctx, self.ctx.spare
        if not query.tsquery or query.keywords is not None or spare is None:
            return None
        if size < ctx.settings.spare_keyword_min_rows or not sees_same_rows(ctx.session):
            return None  # too small to pay, or this transaction wrote rows no other connection sees yet

        async def read(session: AsyncSession) -> list[CandidateRow]:
            matched = await RecallStore(session, query.scope.tenant).keyword_candidates(query)
            into.add(matched)
            return matched

        return spare.start(query.scope.tenant, read)

    async def _reinforce(self, ids: list[uuid.UUID], now: datetime) -> None:
        if self.ctx.reinforcements is not None:
            self.ctx.reinforcements.note(self.ctx.tenant, ids, now)  # written in the background
        else:
            await self.ctx.store.access.once(ids, now)


@dataclass(slots=True)
class _Plan:
    """What one recall's candidate statement is built for, known before the query's vector."""

    scope: Scope
    tsquery: str | None  # None: the query has no words, no text half
    use_index: bool  # HNSW answers the cosine half
    size: int  # the scope's live rows as counted for the plan
    stats: TextStats | None  # BM25's statistics (None without a text half)
    keywords: KeywordScores | None = None  # the text half, read while the query was embedded


def _without_keywords(query: CandidateQuery) -> CandidateQuery:
    return CandidateQuery(
        query.scope,
        query.embedding,
        query.embed_model,
        None,
        query.k,
        query.now,
        query.keyword_cap,
        moment=query.moment,
        neighbours=query.neighbours,
    )


def _result(
    packed: Packed[CandidateRow],
    candidates: Candidates,
    budget: int,
    floor: float,
    plan: str,
    latency: Latency,
    moment: Moment,
) -> RecallResult:
    memories = [
        RecalledMemory(
            memory=inc.item.ref.memory(),
            score=inc.item.score,
            relevance=inc.item.relevance,
            components=candidates.components[inc.item.ref.id],
            tokens=inc.tokens,
            passage=None
            if inc.excerpt is None
            else PassageShown(inc.excerpt.ordinal, inc.excerpt.start, inc.excerpt.end),
        )
        for inc in packed.included
    ]
    return RecallResult(
        context=packed.context,
        token_budget=budget,
        tokens_used=packed.tokens_used,
        memories=memories,
        skipped=[
            SkippedMemory(
                s.item.ref.id, s.reason, s.item.score, s.item.relevance, candidates.components[s.item.ref.id]
            )
            for s in packed.skipped
        ],
        candidates=candidates.count,
        plan=plan,
        min_relevance=floor,
        latency_ms=latency,
        moment=moment,
    )


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)

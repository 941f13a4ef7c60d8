"""Recall's candidates, filtered and rendered as the statement's rows arrive, then scored together:
the fusion reads every candidate's raw scores, and a long memory picks the passage its line may show."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

from app.language.rules import states_condition
from app.lib.ranking import RankingPolicy
from app.lib.tokens import TokenCounter
from app.memory.fusion import Relevance, best_unit, cosine_bounds, fuse
from app.memory.lines import day_header, line_body, line_prefix, superseded_mark
from app.memory.models import RecallInput
from app.memory.packing import Excerpt, PackItem
from app.memory.passages import Span, excerpt
from app.memory.scoring import relevance_share, score
from app.store.candidates import CandidateRow, PassageRow
from app.vocabulary import MemoryStatus, MemoryType, Privacy


class Candidates:
    """Recall's candidates, filtered and rendered as each half's rows arrive, and scored together once
    both have (`items`): the normalised and rank fusions read every candidate's raw scores.

    The first row seen of a memory is kept: the text half's rows are added first (they carry the
    keyword rank; the cosine half's rows carry 0 when the text half was read apart).

    A superseded memory's line says so ("(superseded 30 Nov 2026)"). For a question about the past
    (`past`) superseded memories keep no slot: the slot's newer memory would veto them, and they are
    what the question asks for.
    """

    def __init__(
        self,
        request: RecallInput,
        policy: RankingPolicy,
        counter: TokenCounter,
        now: datetime,
        *,
        past: bool = False,
        cosine_floor: float | None = None,
    ):
        self.request, self.policy, self.counter, self.now = request, policy, counter, now
        self.past = past
        self.cosine_floor = cosine_floor  # the embedder's relevance floor: `minmax` scales cosines from it
        self.wanted_types = set(request.types) if request.types else None
        self.components: dict[uuid.UUID, dict[str, float]] = {}
        self._rows: list[tuple[CandidateRow, str]] = []  # kept rows and their line prefixes
        self._seen: set[uuid.UUID] = set()

    @property
    def count(self) -> int:
        """Distinct candidates loaded, before the type and privacy filters."""
        return len(self._seen)

    def add(self, rows: Sequence[CandidateRow]) -> None:
        for m in rows:
            if m.id in self._seen:
                continue
            self._seen.add(m.id)
            if self.wanted_types is not None and m.type not in self.wanted_types:
                continue
            if m.privacy == Privacy.SENSITIVE and not self.request.include_sensitive:
                continue
            prefix = _prefix(m)
            if m.status == MemoryStatus.SUPERSEDED:
                prefix += superseded_mark(m.columns["valid_to"])
            self._rows.append((m, prefix))

    def items(self) -> list[PackItem[CandidateRow]]:
        """Every candidate scored, in a fixed order (newest first, then content, then id), whichever half
        arrived first, so equal scores pack the same way every time."""
        request, policy = self.request, self.policy
        rows = [m for m, _ in self._rows]
        fused = fuse(
            [m.cosine for m in rows],
            [m.keyword_rank for m in rows],
            policy.fusion,
            saturation=policy.keyword_saturation,
            rrf_k=policy.rrf_k,
            cosine_floor=self.cosine_floor,
        )
        best_bm25 = max((m.keyword_rank for m in rows), default=0.0)
        weights = policy.relevance_weights()
        low, high = cosine_bounds(policy.fusion, [m.cosine for m in rows], self.cosine_floor)
        span = high - low if high > low else 1.0
        neighbours = _neighbours(rows, fused, weights) if policy.neighbour_weight > 0 else None
        items: list[PackItem[CandidateRow]] = []
        for index, ((m, prefix), relevance) in enumerate(zip(self._rows, fused, strict=True)):
            s = score(
                m,
                now=self.now,
                policy=policy,
                project_id=request.project_id,
                fused=relevance,
                neighbour=neighbours[index] if neighbours is not None else 0.0,
            )
            passage = shown_passage(m, best_bm25, weights, span)
            prefix_tokens = self.counter.count(prefix)
            self.components[m.id] = s.components
            bonus = policy.prefer_type_bonus if request.prefer_type == m.type else 0.0
            constraint = m.type == MemoryType.CONSTRAINT
            items.append(
                PackItem(
                    ref=m,
                    line=_line(prefix, m.content),
                    score=s.score + bonus,
                    relevance=s.relevance,
                    always=m.protected,
                    standing=constraint,
                    # Read only for a standing memory, the few a recall has (`PackItem.holds`).
                    conditional=policy.conditional_rules
                    and (m.protected or constraint)
                    and states_condition(m.content),
                    header=day_header(m),
                    slot=self._slot(m),
                    content_hash=m.content_hash,
                    valid_from=m.valid_from,
                    tokens=None if m.content_tokens is None else prefix_tokens + m.content_tokens,
                    excerpt=None if passage is None else _excerpt(m, prefix, prefix_tokens, passage),
                )
            )
        return sorted(items, key=lambda i: (i.valid_from, i.content_hash, i.ref.id.int), reverse=True)

    def _slot(self, m: CandidateRow) -> tuple[str, str] | None:
        if m.subject is None or (self.past and m.status == MemoryStatus.SUPERSEDED):
            return None
        return (m.subject, m.type)


def _neighbours(
    rows: Sequence[CandidateRow], fused: Sequence[Relevance], weights: tuple[float, float]
) -> list[float]:
    """Each candidate's neighbours' best relevance share: the best among the candidates of its user and
    session observed at its `prev_at` or `next_at` (0 where none is a candidate). Only a candidate with
    a neighbour time has a session, and only one with a session can be another's neighbour (one alone in
    its session is no one's)."""
    in_session = [(m, relevance) for m, relevance in zip(rows, fused, strict=True) if m.prev_at or m.next_at]
    best: dict[tuple[str, str, datetime], float] = {}
    for m, relevance in in_session:
        key = (m.columns["user_id"], m.columns["session_id"], m.valid_from)
        best[key] = max(best.get(key, 0.0), relevance_share(relevance, weights))
    found: dict[uuid.UUID, float] = {}
    for m, _ in in_session:
        user, session = m.columns["user_id"], m.columns["session_id"]
        around = [best.get((user, session, at), 0.0) for at in (m.prev_at, m.next_at) if at is not None]
        found[m.id] = max(around, default=0.0)
    return [found.get(m.id, 0.0) for m in rows]


# A memory's line prefix by (type, subject, content digest): whether the subject adds meaning reads every
# word of the content (`lines.label`), the same for every recall that finds the memory. The digest is of
# the normalised content, whose words are the content's lower-cased words, all the label reads.
_PREFIXES: dict[tuple[str, str, str], str] = {}
_PREFIXES_MAX = 20_000  # ~3 MB; emptied when full


def _prefix(m: CandidateRow) -> str:
    if m.subject is None:
        return line_prefix(m)  # the type alone: nothing to read
    key = (m.type, m.subject, m.content_hash)
    prefix = _PREFIXES.get(key)
    if prefix is None:
        if len(_PREFIXES) >= _PREFIXES_MAX:
            _PREFIXES.clear()
        prefix = _PREFIXES[key] = line_prefix(m)
    return prefix


def shown_passage(
    m: CandidateRow, best_bm25: float, weights: tuple[float, float], cosine_span: float = 1.0
) -> PassageRow | None:
    """The passage a long memory is shown as: the best of its own by both halves (`fusion.best_unit`).
    The memory itself is ranked by its whole vector, as a short one is, and by its best passage's BM25
    (the statement's, over units); docs/RANKING.md ("Passages") has the variants measured."""
    if not m.passage_scores:
        return None
    return m.passage(best_unit(m.passage_scores, best_bm25, weights, cosine_span))


def _line(prefix: str, content: str) -> Callable[[], str]:
    """What renders a candidate's whole line: most candidates are never counted or shown, and a long
    turn's line costs more to make than the rest of its scoring."""
    return lambda: prefix + line_body(content)


def _excerpt(m: CandidateRow, prefix: str, prefix_tokens: int, passage: PassageRow) -> Excerpt:
    """The line of a long memory shown as `passage` (rendered only if the packer takes it)."""
    span = Span(passage.start, passage.end)
    return Excerpt(
        passage.ordinal,
        span.start,
        span.end,
        prefix_tokens + passage.tokens,
        lambda: prefix + excerpt(m.content, span),
    )

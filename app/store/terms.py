"""Recall's text half from a per-process index of each scope's terms, checked against the scope on
every recall.

The text half in SQL (app/store/bm25.py) picks the query's lexemes out of every matching row's tsvector
and groups them, on each recall: a broad OR query matches most of a small scope (~580 of 995 LoCoMo
facts), so that pass was most of a small recall's statement (docs/RANKING.md, "Where recall's time goes
now"). Here each unit's terms (a memory without passages, or each passage of a long one: the lexemes of
its tsvector with their position counts, and its length) are read once and kept in an inverted index
per scope, and a recall scores only the postings of the query's lexemes.

Nothing is trusted that the scope does not confirm. Each recall lists the scope's rows (`TermListing`:
every id with a fingerprint of what its terms derive from: the row version, the content and the
subject) in one index scan that replaces BM25's statistics statement; rows not yet read, or changed
since (another fingerprint), have their terms read before scoring; rows no longer listed are not live.
N, the mean length, df and every unit's BM25 then come from the listed rows alone, by the formula and
in the order of operations of the SQL (`bm25.term_score`), so the scores are the statement's: for a
scope of at most `keyword_max_matches` rows (the statement's cap on matches never binds) they select
the same top-k (tests/integration/test_scope_terms.py). A larger scope's matches are all scored here,
where the statement scored its first `keyword_max_matches`.

The index is the process's, bounded by `capacity` units over all scopes (least recently used scopes
go first); a scope whose dead units outnumber its live ones is read afresh. The rows are read under
the tenant's row-level security like every other read, and the index is keyed by tenant and scope.
"""

from __future__ import annotations

import heapq
import math
import uuid
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from app.store.bm25 import TextStats
from app.vocabulary import Scope

# (memory id, the fingerprint it was read with, its content hash, its units: (ordinal or None for the
# memory itself, lexemes, their position counts))
UnitTerms = tuple[int | None, Sequence[str], Sequence[int]]
MemoryTerms = tuple[uuid.UUID, int, str, list[UnitTerms]]


@dataclass(frozen=True, slots=True)
class Listed:
    """A listing of a scope as the index last saw it: how many rows and the sum of their fingerprints
    (what the listing statement compares), which units are live, and BM25's statistics over them."""

    rows: int
    total: int
    live: bytearray  # by unit index; units indexed after this listing are not in it
    stats: TextStats


@dataclass(frozen=True, slots=True)
class TextHalf:
    """What the index gives one recall: the scope's rows and statistics, and for each matching memory
    its BM25 (its best unit's) with its matching passages' ordinals and BM25; the query's ideal BM25;
    the top-k memories' ids."""

    listed: int  # the scope's rows (memories)
    stats: TextStats
    scores: dict[uuid.UUID, tuple[float, list[int] | None, list[float] | None]]
    ideal: float
    top: tuple[uuid.UUID, ...]


class ScopeTerms:
    """One scope's units as read: their memory, passage ordinal and length, the postings of each lexeme
    (the units holding it, with its position count), and the scope's last listing."""

    def __init__(self) -> None:
        self.read: dict[uuid.UUID, tuple[int, str, tuple[int, ...]]] = {}  # id -> (fingerprint, hash, units)
        self.memory: list[uuid.UUID] = []
        self.ordinal: list[int | None] = []
        self.length: list[int] = []
        self.postings: dict[str, tuple[array[int], array[int]]] = {}
        self.listed: Listed | None = None

    @property
    def units(self) -> int:
        return len(self.memory)

    @property
    def live_units(self) -> int:
        """The units of the memories last listed."""
        return 0 if self.listed is None else self.listed.stats.rows

    def missing(self, ids: Sequence[uuid.UUID], fingerprints: Sequence[int]) -> list[uuid.UUID]:
        """The listed memories not read yet, or read with another fingerprint."""
        read = self.read
        return [
            memory
            for memory, fingerprint in zip(ids, fingerprints, strict=True)
            if (known := read.get(memory)) is None or known[0] != fingerprint
        ]

    def add(self, rows: Sequence[MemoryTerms]) -> None:
        """Index memories just read (a changed one's earlier units stay, no longer live)."""
        for memory, fingerprint, digest, units in rows:
            passages = [u for u in units if u[0] is not None]
            indices = []
            for ordinal, lexemes, counts in passages or [u for u in units if u[0] is None]:
                index = len(self.memory)
                self.memory.append(memory)
                self.ordinal.append(ordinal)
                self.length.append(len(lexemes))
                for lexeme, count in zip(lexemes, counts, strict=True):
                    posting = self.postings.get(lexeme)
                    if posting is None:
                        posting = self.postings[lexeme] = (array("i"), array("i"))
                    posting[0].append(index)
                    posting[1].append(count)
                indices.append(index)
            self.read[memory] = (fingerprint, digest, tuple(indices))

    def list(self, ids: Sequence[uuid.UUID], total: int) -> Listed:
        """The scope as just listed (every listed memory read): its live units and statistics."""
        live = bytearray(self.units)
        units = length = long = 0
        for memory in ids:
            known = self.read.get(memory)
            if known is None:  # listed, but gone by the time its terms were read
                continue
            indices = known[2]
            if indices and self.ordinal[indices[0]] is not None:
                long += 1  # a long memory: its units are its passages
            for unit in indices:
                live[unit] = 1
                length += self.length[unit]
            units += len(indices)
        stats = TextStats(units, length / units if units else 0.0, long)
        self.listed = Listed(len(ids), total, live, stats)
        return self.listed

    def score(self, listed: Listed, lexemes: Sequence[str], *, k: int, k1: float, b: float) -> TextHalf:
        """BM25 of the query's lexemes over a listing's live units, as app/store/bm25.py computes it."""
        live, size, stats = listed.live, len(listed.live), listed.stats
        n, avgdl = float(max(stats.rows, 1)), max(stats.avg_length, 1.0)
        hits: list[tuple[float, array[int], array[int]]] = []
        dfs: list[int] = []
        for lexeme in lexemes:
            posting = self.postings.get(lexeme)
            df = 0 if posting is None else sum(1 for u in posting[0] if u < size and live[u])
            dfs.append(df)
            if posting is not None and df:
                hits.append((_idf(n, df), *posting))
        unit_rank: dict[int, float] = {}
        length = self.length
        for term_idf, units, counts in hits:
            for unit, tf in zip(units, counts, strict=True):
                if unit < size and live[unit]:
                    share = term_idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length[unit] / avgdl))
                    unit_rank[unit] = unit_rank.get(unit, 0.0) + share
        if not unit_rank:
            return TextHalf(listed.rows, stats, {}, 0.0, ())
        best: dict[uuid.UUID, float] = {}
        passages: dict[uuid.UUID, tuple[list[int], list[float]]] = {}
        for unit, rank in unit_rank.items():
            memory, ordinal = self.memory[unit], self.ordinal[unit]
            best[memory] = max(best.get(memory, rank), rank)
            if ordinal is not None:
                ordinals, ranks = passages.setdefault(memory, ([], []))
                ordinals.append(ordinal)
                ranks.append(rank)
        scores: dict[uuid.UUID, tuple[float, list[int] | None, list[float] | None]] = {
            memory: (rank, *passages.get(memory, (None, None))) for memory, rank in best.items()
        }
        read = self.read
        top = heapq.nsmallest(k, scores, key=lambda m: (-scores[m][0], read[m][1]))
        ideal = sum(_idf(n, df) for df in dfs)
        return TextHalf(listed.rows, stats, scores, ideal, tuple(top))


def _idf(n: float, df: int) -> float:
    """bm25.idf as the SQL computes it: N as a float (at least 1), never below df."""
    return math.log(1 + (max(n, df) - df + 0.5) / (df + 0.5))


class TermIndex:
    """The process's index of scopes' terms, at most `capacity` units over all scopes."""

    def __init__(self, capacity: int = 200_000) -> None:
        self.capacity = capacity
        self._scopes: OrderedDict[Scope, ScopeTerms] = OrderedDict()
        self._units = 0

    @property
    def units(self) -> int:
        return self._units

    def scope(self, key: Scope) -> ScopeTerms:
        """The scope's index (a new, empty one if it had none or has twice as many units as it had live
        at its last recall: read afresh rather than carry what was forgotten or changed)."""
        terms = self._scopes.get(key)
        if terms is None or terms.units > 2 * terms.live_units + 1000:
            if terms is not None:
                self._units -= terms.units
            terms = self._scopes[key] = ScopeTerms()
        self._scopes.move_to_end(key)
        return terms

    def add(self, key: Scope, terms: ScopeTerms, rows: Sequence[MemoryTerms]) -> None:
        """Index rows just read into a scope's index, then drop the least recently used scopes until
        the index is within its capacity (the scope in use is the most recent: it stays, however
        large)."""
        before = terms.units
        terms.add(rows)
        if self._scopes.get(key) is terms:  # else replaced or dropped meanwhile: no longer counted
            self._units += terms.units - before
        while self._units > self.capacity and len(self._scopes) > 1:
            _, dropped = self._scopes.popitem(last=False)
            self._units -= dropped.units

    def clear(self) -> None:
        self._scopes.clear()
        self._units = 0


TERM_INDEX = TermIndex()

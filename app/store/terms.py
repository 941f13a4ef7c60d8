"""Recall's text half from a per-process index of each scope's terms, checked against the scope on
every recall.

The text half in SQL (app/store/bm25.py) picks the query's lexemes out of every matching row's tsvector
and groups them, on each recall: a broad OR query matches most of a small scope (~580 of 995 LoCoMo
facts), so that pass was most of a small recall's statement (docs/RANKING.md, "Where recall's time goes
now"). Here each unit's terms (a memory without passages, or each passage of a long one: the lexemes of
its tsvector with their position counts, and its length) are read once and kept in an inverted index
per scope, and a recall scores only the postings of the query's lexemes.

Nothing is trusted that the scope does not confirm. Each recall's first statement (sent while the query
is embedded, in place of BM25's statistics statement) counts the scope's rows and sums their
fingerprints (its id hashed with its `terms_version`, drawn anew from a sequence on every insert and every
change of its content, subject or passages; both read from one index, not the rows), and
lists every row's id and fingerprint only when the two differ from the index's last listing (`Listed`).
Rows not read yet, or read with another fingerprint, have their terms read (until a scope is all read,
the statement answers): on a spare connection apart from the recall when one is free, all of them a
bounded piece a statement, one read a scope at a time; else by the recall itself, a bounded piece a
recall. Rows no longer listed are not live. N, the mean
length, df and every unit's BM25 then come from the listed rows alone, by the SQL's operations in the
SQL's order (`ScopeTerms.score`), so the scores are the statement's to the bit and, for a scope of at
most `keyword_max_matches` rows (the statement's cap on matches never binds, its statistics are never
remembered), the top-k is too (tests/integration/test_scope_terms.py). A larger scope's matches are all
scored here, with statistics counted now, where the statement scored its first `keyword_max_matches`
with statistics up to a minute old.

The index is the process's, bounded by `capacity` units over all scopes (least recently used scopes
go first); a scope whose dead units outnumber its live ones is read afresh. A scope is indexed from
its second recall in the process, up to `term_index_max_rows` rows. The rows are read under the
tenant's row-level security like every other read, and the index is keyed by scope, tenant first.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.lib.logging import get_logger
from app.store.bm25 import TextStats
from app.vocabulary import Scope

log = get_logger("engram.terms")

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
    live: npt.NDArray[np.bool_]  # by unit; units indexed after this listing are not in it
    stats: TextStats


@dataclass(frozen=True, slots=True)
class TextHalf:
    """What the index gives one recall: the scope's rows and statistics, each matching memory's BM25
    (its best unit's), the matching passages' ordinals and BM25 of long ones, the query's ideal BM25
    and the top-k memories' ids."""

    listed: int  # the scope's rows (memories)
    stats: TextStats
    ranks: dict[uuid.UUID, float]
    passages: dict[uuid.UUID, tuple[list[int], list[float]]]
    ideal: float
    top: tuple[uuid.UUID, ...]


class ScopeTerms:
    """One scope's units as read, in arrays by unit: the memory read (a slot: a memory changed since is
    read into a new one), the passage ordinal (-1: the memory itself) and the length; the postings of
    each lexeme (the units holding it, ascending, with its position count); the scope's last listing."""

    def __init__(self) -> None:
        self.read: dict[uuid.UUID, tuple[int, int]] = {}  # id -> (fingerprint, slot)
        self.ids: list[uuid.UUID] = []  # by slot
        self.hashes: list[str] = []  # by slot: the content hash, which breaks ties as the SQL does
        self.first: array[int] = array("i")  # by slot: its first unit (its units are consecutive)
        self.count: array[int] = array("i")  # by slot: its units
        self.slot: array[int] = array("i")  # by unit
        self.ordinal: array[int] = array("i")
        self.length: array[int] = array("i")
        self.postings: dict[str, tuple[array[int], array[int]]] = {}
        # The slots of long memories holding each lexeme in their whole text: a passage counts only
        # where its memory matches, as in the SQL (a passage's tsvector is made from its slice alone,
        # and a slice can be tokenised otherwise than the same words in the whole text).
        self.whole: dict[str, array[int]] = {}
        self.listed: Listed | None = None

    @property
    def units(self) -> int:
        return len(self.slot)

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
        """Index memories just read (a changed one's earlier slot stays, no longer live)."""
        for memory, fingerprint, digest, units in rows:
            slot = len(self.ids)
            self.ids.append(memory)
            self.hashes.append(digest)
            self.first.append(self.units)
            passages = [u for u in units if u[0] is not None]
            itself = [u for u in units if u[0] is None]
            chosen = passages or itself
            if passages:
                for _, lexemes, _ in itself:
                    for lexeme in lexemes:
                        self.whole.setdefault(lexeme, array("i")).append(slot)
            for ordinal, lexemes, counts in chosen:
                index = self.units
                self.slot.append(slot)
                self.ordinal.append(-1 if ordinal is None else ordinal)
                self.length.append(len(lexemes))
                for lexeme, count in zip(lexemes, counts, strict=True):
                    posting = self.postings.get(lexeme)
                    if posting is None:
                        posting = self.postings[lexeme] = (array("i"), array("i"))
                    posting[0].append(index)
                    posting[1].append(count)
            self.count.append(len(chosen))
            self.read[memory] = (fingerprint, slot)

    def list(self, ids: Sequence[uuid.UUID], total: int) -> Listed:
        """The scope as just listed (every listed memory read): its live units and statistics."""
        live = np.zeros(self.units, dtype=np.bool_)
        long = 0
        for memory in ids:
            known = self.read.get(memory)
            if known is None:  # listed, but gone by the time its terms were read
                continue
            slot = known[1]
            first = self.first[slot]
            live[first : first + self.count[slot]] = True
            long += self.ordinal[first] >= 0  # a long memory: its units are its passages
        units = int(live.sum())
        length = int(_view(self.length, live.size)[live].sum())
        stats = TextStats(units, length / units if units else 0.0, long)
        self.listed = Listed(len(ids), total, live, stats)
        return self.listed

    def score(self, listed: Listed, lexemes: Sequence[str], *, k: int, k1: float, b: float) -> TextHalf:
        """BM25 of the query's lexemes over a listing's live units, as app/store/bm25.py computes it in
        SQL: the same operations in the same order on each unit (a unit's shares added in the order of
        the query's lexemes, which is the order its tsvector gives them there)."""
        live, stats = listed.live, listed.stats
        size = live.size
        n, avgdl = float(max(stats.rows, 1)), max(stats.avg_length, 1.0)
        length = _view(self.length, size)
        rank = np.zeros(size)
        eligible = None  # without long memories, every live unit
        if stats.long:  # a passage where its memory matches the query (the SQL's `units`)
            matches = np.zeros(len(self.ids), dtype=np.bool_)
            for lexeme in lexemes:
                holding = self.whole.get(lexeme)
                if holding is not None:
                    matches[_view(holding)] = True
            eligible = live & ((_view(self.ordinal, size) < 0) | matches[_view(self.slot, size)])
        dfs: list[int] = []
        for lexeme in lexemes:
            posting = self.postings.get(lexeme)
            if posting is None:
                dfs.append(0)
                continue
            units, counts = _view(posting[0]), _view(posting[1])
            if units.size and units[-1] >= size:  # units indexed after the listing
                cut = int(np.searchsorted(units, size))
                units, counts = units[:cut], counts[:cut]
            keep = live[units] if eligible is None else eligible[units]
            units, tf = units[keep], counts[keep].astype(np.float64)
            dfs.append(int(units.size))
            if units.size:
                term_idf = _idf(n, units.size)
                rank[units] += term_idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length[units] / avgdl))
        matched = np.flatnonzero(rank)
        if not matched.size:
            return TextHalf(listed.rows, stats, {}, {}, 0.0, ())
        unit_rank = rank[matched]
        slots = _view(self.slot)[matched]
        best = np.zeros(len(self.ids))
        np.maximum.at(best, slots, unit_rank)
        found = np.unique(slots)
        found_rank = best[found]
        ids, hashes = self.ids, self.hashes
        ranks = dict(zip([ids[s] for s in found.tolist()], found_rank.tolist(), strict=True))
        passages: dict[uuid.UUID, tuple[list[int], list[float]]] = {}
        ordinals = _view(self.ordinal)[matched]
        in_passage = ordinals >= 0
        if in_passage.any():
            for slot, ordinal, value in zip(
                slots[in_passage].tolist(),
                ordinals[in_passage].tolist(),
                unit_rank[in_passage].tolist(),
                strict=True,
            ):
                memory_ordinals, memory_ranks = passages.setdefault(ids[slot], ([], []))
                memory_ordinals.append(ordinal)
                memory_ranks.append(value)
        if found.size > k:  # the k best and any tied with the k-th, then ties broken by content and id
            kth = np.partition(found_rank, found.size - k)[found.size - k]
            near = found_rank >= kth
            found, found_rank = found[near], found_rank[near]
        chosen = sorted(
            zip(found_rank.tolist(), found.tolist(), strict=True),
            key=lambda r: (-r[0], hashes[r[1]], ids[r[1]]),
        )
        top = tuple(ids[slot] for _, slot in chosen[:k])
        ideal = sum(_idf(n, df) for df in dfs)
        return TextHalf(listed.rows, stats, ranks, passages, ideal, top)


def _view(values: array[int], size: int | None = None) -> npt.NDArray[np.int32]:
    """An array's items as numpy int32, without a copy (taken anew each time: appending may move them)."""
    view = np.frombuffer(values, dtype=np.int32) if len(values) else np.zeros(0, dtype=np.int32)
    return view if size is None else view[:size]


def _idf(n: float, df: int) -> float:
    """bm25.idf as the SQL computes it: N as a float (at least 1), never below df."""
    return math.log(1 + (max(n, df) - df + 0.5) / (df + 0.5))


class TermIndex:
    """The process's index of scopes' terms, at most `capacity` units over all scopes."""

    def __init__(self, capacity: int = 50_000, remember: int = 100_000, large_ttl_s: float = 60.0) -> None:
        self.capacity = capacity
        self._scopes: OrderedDict[Scope, ScopeTerms] = OrderedDict()
        self._units = 0
        # Scopes recalled (the latest `remember`), and those found larger than the index takes, when.
        self._seen: OrderedDict[Scope, None] = OrderedDict()
        self._remember = remember
        self._large: dict[Scope, float] = {}
        self._large_ttl = large_ttl_s
        self._reading: dict[Scope, asyncio.Task[None]] = {}  # scopes being read apart from recalls

    def wanted(self, key: Scope) -> bool:
        """Whether a recall of the scope should go through the index: it has one, or the scope was
        recalled before (a scope recalled once, and never again, is not worth reading), unless it was
        found too large within the last minute (its listing would be wasted). Notes the recall."""
        if key in self._scopes:
            return True
        found = self._large.get(key)
        if found is not None:
            if time.monotonic() - found < self._large_ttl:
                return False
            del self._large[key]
        if key in self._seen:
            return True
        self._seen[key] = None
        if len(self._seen) > self._remember:
            self._seen.popitem(last=False)
        return False

    @property
    def units(self) -> int:
        return self._units

    def scope(self, key: Scope) -> ScopeTerms:
        """The scope's index (a new, empty one if it had none or has twice as many units as it had live
        at its last recall: read afresh rather than carry what was forgotten or changed)."""
        terms = self._scopes.get(key)
        if terms is None or (terms.listed is not None and terms.units > 2 * terms.live_units + 1000):
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

    def holds(self, key: Scope, terms: ScopeTerms) -> bool:
        """Whether `terms` is still the scope's index (not replaced or dropped since it was taken)."""
        return self._scopes.get(key) is terms

    def reading(self, key: Scope) -> bool:
        """Whether the scope's rows are being read into the index apart from any recall."""
        task = self._reading.get(key)
        if task is None:
            return False
        if task.done() or task.get_loop() is not asyncio.get_running_loop():  # a loop closed since
            del self._reading[key]
            return False
        return True

    def read_apart(self, key: Scope, task: asyncio.Task[None]) -> None:
        """Note `task` as the one reading the scope's rows into the index (until it ends)."""
        self._reading[key] = task
        task.add_done_callback(lambda done: self._read(key, done))

    def _read(self, key: Scope, task: asyncio.Task[None]) -> None:
        if self._reading.get(key) is task:
            del self._reading[key]
        if not task.cancelled() and (error := task.exception()) is not None:
            log.warning("term_index_read_failed", error=type(error).__name__)

    async def settled(self) -> None:
        """Wait until no scope is being read apart (every read started so far has ended)."""
        loop = asyncio.get_running_loop()
        while tasks := [t for t in self._reading.values() if t.get_loop() is loop and not t.done()]:
            await asyncio.wait(tasks)

    def stop_reading(self) -> None:
        """Cancel the reads apart (the process is stopping); what they read so far stays."""
        for task in self._reading.values():
            if not task.get_loop().is_closed():
                task.cancel()
        self._reading.clear()

    def too_large(self, key: Scope) -> None:
        """The scope has more rows than the index takes: its index is let go, and for a minute its
        recalls do not list it."""
        dropped = self._scopes.pop(key, None)
        if dropped is not None:
            self._units -= dropped.units
        if len(self._large) >= self._remember:
            self._large.clear()
        self._large[key] = time.monotonic()

    def clear(self) -> None:
        self.stop_reading()
        self._scopes.clear()
        self._seen.clear()
        self._large.clear()
        self._units = 0


TERM_INDEX = TermIndex()

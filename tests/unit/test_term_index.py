"""The process's index of scopes' terms stays within its capacity (least recently used scopes go
first, the one in use stays), and a scope that carries more dead units than live ones is read afresh."""

from __future__ import annotations

import uuid

from app.store.terms import MemoryTerms, TermIndex
from app.tenancy.types import TenantId
from app.vocabulary import Scope


def _rows(n: int) -> list[MemoryTerms]:
    return [(uuid.uuid4(), i, f"{i:064x}", [(None, ["word", f"w{i}"], [1, 2])]) for i in range(n)]


def _scope(user: str) -> Scope:
    return Scope(TenantId(uuid.UUID(int=1)), user, None)


def test_the_least_recently_used_scopes_go_first() -> None:
    index = TermIndex(capacity=10)
    first, second = index.scope(_scope("a")), index.scope(_scope("b"))
    index.add(_scope("a"), first, _rows(4))
    index.add(_scope("b"), second, _rows(4))
    assert index.units == 8
    assert index.scope(_scope("a")) is first  # now the most recent
    third = index.scope(_scope("c"))
    index.add(_scope("c"), third, _rows(4))  # 12 > 10: "b" goes
    assert index.units == 8
    assert index.scope(_scope("a")) is first
    assert index.scope(_scope("b")) is not second  # a new, empty one
    big = index.scope(_scope("d"))
    index.add(_scope("d"), big, _rows(30))  # larger than the capacity alone: it stays, the rest go
    assert index.units == 30
    assert index.scope(_scope("d")) is big


def test_a_scope_mostly_dead_is_read_afresh() -> None:
    index = TermIndex()
    terms = index.scope(_scope("a"))
    rows = _rows(1300)
    index.add(_scope("a"), terms, rows)
    terms.list([memory for memory, *_ in rows[:100]], 0)  # 100 of 1,300 units live
    assert index.scope(_scope("a")) is not terms
    assert index.units == 0


def test_a_listing_scores_only_its_live_units() -> None:
    index = TermIndex()
    terms = index.scope(_scope("a"))
    rows = _rows(3)
    index.add(_scope("a"), terms, rows)
    listed = terms.list([rows[0][0], rows[2][0]], 0)
    half = terms.score(listed, ["w1", "w2", "word"], k=5, k1=1.2, b=0.75)
    assert set(half.ranks) == {rows[0][0], rows[2][0]}
    assert half.stats.rows == 2
    assert half.top[0] == rows[2][0]  # holds "w2" too


def test_a_scope_is_indexed_once_recalled_again_and_not_while_too_large() -> None:
    index = TermIndex(large_ttl_s=3600)
    assert not index.wanted(_scope("a"))  # the first recall: the statement's
    assert index.wanted(_scope("a"))
    assert index.wanted(_scope("a"))
    index.too_large(_scope("a"))
    assert not index.wanted(_scope("a"))  # for the next hour here: its listing would be wasted
    expired = TermIndex(large_ttl_s=0)
    expired.wanted(_scope("b"))
    expired.too_large(_scope("b"))
    assert expired.wanted(_scope("b"))


def test_a_scope_being_read_is_not_read_afresh() -> None:
    """Before its first complete listing a scope has no live units yet: however many it has read, it
    keeps them (else a scope of 1,000+ units would start over on every recall and never be read)."""
    index = TermIndex()
    terms = index.scope(_scope("a"))
    index.add(_scope("a"), terms, _rows(1500))
    assert index.scope(_scope("a")) is terms

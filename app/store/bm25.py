"""Okapi BM25 for recall's text half, computed inside PostgreSQL at query time, per scope.

The tsvector and its covering index stay the matcher: an OR tsquery finds the scope's matches, and the
statement scores them by BM25 instead of `ts_rank_cd` (which has no idf and no length normalisation: a
speaker's name in half the turns weighed as much as a rare word). Each piece comes from the scope itself,
under the tenant's row-level security like every other read:

- df of each query lexeme: the number of the scope's matches holding it. An OR query's matches contain
  every row holding any query lexeme, so df is exact unless the matches are capped by
  `keyword_max_matches` (a query that broad matches most of the scope; df is then a lower bound).
- tf: the lexeme's positions in the row's tsvector. The query's lexemes are picked out of it in C
  (weight them A, keep the A entries: every stored position has the default weight D) before `unnest`,
  so a long row yields a few rows rather than one per distinct lexeme.
- the row's length: `length(content_tsv)`, its distinct lexemes (the tsvector keeps no token count; the
  Python reference in the tests uses the same definition).
- N and the mean length: `TextStats`, from one count over the scope (`RecallStore.text_stats`; scopes of
  1000+ rows are remembered for a minute by `ScopeSizes`, so there they can be a minute old).

The documents BM25 counts are units: a memory without passages, or each passage of a long memory
(migration 0012), never a long memory's whole text. N, the mean length and df count units, so a
passage is scored against documents of its own size, and a long memory's BM25 is its best passage's.

Why query-time statistics rather than a table kept by writes: see docs/RANKING.md (every remember,
supersession, forget, erase, import and re-embed would rewrite one df row per distinct lexeme of the
memory, and the rows of common lexemes are hot: every write of a user contends on them).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# A tsvector's text form: 'lexeme':1,4B 'other':2 (positions optional, quotes doubled inside).
_TSV_ENTRY = re.compile(r"'((?:[^']|'')+)'(?::([0-9A-D,]+))?")


@dataclass(frozen=True, slots=True)
class TextStats:
    """What BM25 needs to know of a whole scope."""

    rows: int  # N: the scope's units (a memory without passages, or each passage of a long memory)
    avg_length: float  # mean length of their tsvectors
    long: int = 0  # the scope's memories with passages (none: recall's statement leaves passages out)

    def params(self) -> dict[str, float]:
        return {"bm25_n": float(max(self.rows, 1)), "bm25_avgdl": max(self.avg_length, 1.0)}


def idf(rows: int, df: int) -> float:
    """Lucene's non-negative idf: ln(1 + (N - df + 0.5) / (df + 0.5)); N is at least df (a remembered
    N can be a minute older than the matches)."""
    n = max(rows, df)
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def term_score(tf: int, length: int, avg_length: float, term_idf: float, k1: float, b: float) -> float:
    """One query lexeme's share of a row's BM25."""
    norm = k1 * (1.0 - b + b * length / max(avg_length, 1.0))
    return term_idf * tf * (k1 + 1.0) / (tf + norm)


def bm25(
    tfs: Mapping[str, int],
    length: int,
    dfs: Mapping[str, int],
    stats: TextStats,
    *,
    k1: float,
    b: float,
) -> float:
    """A row's BM25 for the query lexemes it holds (`tfs`: lexeme -> positions in the row)."""
    return sum(
        term_score(tf, length, stats.avg_length, idf(stats.rows, dfs[lexeme]), k1, b)
        for lexeme, tf in tfs.items()
        if tf > 0
    )


def lexemes_of(tsvector: str | None) -> dict[str, int]:
    """lexeme -> tf (its positions; 1 without) of a tsvector's text form, as PostgreSQL returns it."""
    return {
        m.group(1).replace("''", "'"): len(m.group(2).split(",")) if m.group(2) else 1
        for m in _TSV_ENTRY.finditer(tsvector or "")
    }


def document_frequencies(rows: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """df of each lexeme over rows given as lexeme -> tf maps."""
    dfs: dict[str, int] = {}
    for tfs in rows:
        for lexeme, tf in tfs.items():
            if tf > 0:
                dfs[lexeme] = dfs.get(lexeme, 0) + 1
    return dfs


# The SQL below is `bm25` above, over the matches of `source` (rows with id, content_hash and a
# matching tsvector `tsv`). Parameters: :words (the query's words), :kw_cap, :k, :bm25_n, :bm25_avgdl,
# :bm25_k1, :bm25_b. Casts: asyncpg would otherwise type `:k1 + 1` as an integer.
_F = "CAST({} AS float8)"
_N, _AVGDL, _K1, _B = (_F.format(p) for p in (":bm25_n", ":bm25_avgdl", ":bm25_k1", ":bm25_b"))


def bm25_ctes(source: str, passages: bool = True) -> str:
    """The text half as CTEs: `unit_scored` (the BM25 of every matching unit: a memory without
    passages, or a passage of one with them; up to `kw_cap` matching memories), `scored` (each
    memory's best unit, its matching passages' ordinals and BM25 as arrays, and the query's ideal BM25,
    app.memory.similarity) and `kw` (the top `k`
    memories, ties broken by content, then id, so equal scores choose the same rows every time). A passage can
    only match where its memory does (its words are a subset of the memory's), so the passages are
    looked up for the matched memories only (`passages` False: the scope has none, every unit is a
    memory)."""
    units = _PASSAGE_UNITS if passages else _MEMORY_UNITS
    return f"""matched AS MATERIALIZED (
                    SELECT id, content_hash, tsv FROM {source} LIMIT :kw_cap
                ), units AS MATERIALIZED ({units}
                ), query_lexemes AS MATERIALIZED (  -- once: a generic plan would stem per row
                    SELECT tsvector_to_array(to_tsvector('english', :words)) AS lexemes
                ), hits AS (
                    SELECT units.id, units.ordinal, t.lexeme, coalesce(cardinality(t.positions), 1) AS tf,
                           length(units.tsv) AS dl
                    FROM units CROSS JOIN query_lexemes q,
                         unnest(ts_filter(setweight(units.tsv, 'A', q.lexemes), '{{a}}')) t
                ), df AS (
                    SELECT lexeme, count(*) AS df FROM hits GROUP BY lexeme
                ), ideal AS (  -- app.memory.similarity.ideal_bm25: the sum of the query lexemes' idf, in
                               -- their order (app/store/terms.py adds them in the same order)
                    SELECT coalesce(sum(ln(1 + (greatest({_N}, d) - d + 0.5) / (d + 0.5))
                                        ORDER BY lexeme COLLATE "C"), 0) AS ideal
                    FROM (SELECT lexeme, coalesce(df.df, 0) AS d
                          FROM query_lexemes q CROSS JOIN unnest(q.lexemes) AS l(lexeme)
                          LEFT JOIN df USING (lexeme)) lexeme_dfs
                ), unit_scored AS MATERIALIZED (
                    SELECT hits.id, hits.ordinal,
                           sum(ln(1 + (greatest({_N}, df.df) - df.df + 0.5) / (df.df + 0.5))
                               * hits.tf * ({_K1} + 1)
                               / (hits.tf + {_K1} * (1 - {_B} + {_B} * hits.dl / {_AVGDL}))) AS rank
                    FROM hits JOIN df USING (lexeme) GROUP BY hits.id, hits.ordinal
                ), scored AS ({_PASSAGE_SCORED if passages else _MEMORY_SCORED}
                ), kw AS (
                    SELECT scored.* FROM scored JOIN matched USING (id)
                    ORDER BY scored.rank DESC, matched.content_hash, scored.id LIMIT :k
                )"""


# The units of the matched memories: with passages, a primary-key range of them per matched memory.
_PASSAGE_UNITS = """
                    SELECT matched.id, p.ordinal, coalesce(p.content_tsv, matched.tsv) AS tsv
                    FROM matched CROSS JOIN to_tsquery('english', :tsq) uq
                         LEFT JOIN LATERAL (
                             SELECT p.ordinal, p.content_tsv FROM memory_passages p
                             WHERE p.tenant_id = :tenant AND p.memory_id = matched.id
                         ) p ON true
                    WHERE p.ordinal IS NULL OR p.content_tsv @@ uq"""
_MEMORY_UNITS = "SELECT id, NULL::smallint AS ordinal, tsv FROM matched"

# Each matched memory's BM25 (its best unit's) with its matching passages' ordinals and BM25. Without
# passages every unit is a memory and `unit_scored` has one row per memory already: no second grouping.
_PASSAGE_SCORED = """
                    SELECT id, max(rank) AS rank,
                           array_agg(ordinal) FILTER (WHERE ordinal IS NOT NULL) AS p_matched,
                           array_agg(rank) FILTER (WHERE ordinal IS NOT NULL) AS p_matched_ranks,
                           (SELECT ideal FROM ideal) AS ideal
                    FROM unit_scored GROUP BY id"""
_MEMORY_SCORED = """
                    SELECT id, rank, NULL::smallint[] AS p_matched, NULL::float8[] AS p_matched_ranks,
                           (SELECT ideal FROM ideal) AS ideal
                    FROM unit_scored"""

# No BM25 in the statement: an empty `scored` with its columns (the memory, its best unit's BM25, the
# ordinals and BM25 of its matching passages, the query's ideal BM25).
_NO_SCORES = """scored AS (
                    SELECT NULL::uuid AS id, 0.0::float8 AS rank, NULL::smallint[] AS p_matched,
                           NULL::float8[] AS p_matched_ranks, 0.0::float8 AS ideal
                    WHERE false
                )"""
# The text half left out: no matches.
NO_KEYWORD_CTES = f"""{_NO_SCORES}, kw AS (SELECT * FROM scored)"""


def known_keyword_ctes(rows: str) -> str:
    """The text half read ahead (`KeywordReads.keyword_scores`): its top-k memories, given as `:kw_ids`,
    those still among `rows` (a memory forgotten or superseded since is not loaded); their BM25 is
    attached in Python, so `scored` is empty here."""
    return f"""{_NO_SCORES}, kw AS (
                    SELECT id FROM memories WHERE {rows} AND id = ANY (CAST(:kw_ids AS uuid[]))
                )"""

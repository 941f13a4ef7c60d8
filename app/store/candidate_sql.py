"""The text of recall's statements (app/store/candidates.py runs them): the scope's rows, the cosine half
over memories and over passages, the text half (app/store/bm25.py), the columns a candidate is loaded
with, and BM25's statistics over the scope's units.

The statements are hand-written to match the indexes of migrations 0004, 0006 and 0012 word for word;
the scope filter comes from `app.store.scope` like every other statement's. A scope without long
memories (`Shape.passages` False) gets the statements it had before passages existed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import DateTime, Float, Integer, column

from app.store.bm25 import NO_KEYWORD_CTES, bm25_ctes, known_keyword_ctes
from app.store.moments import moment_sql
from app.store.scope import live_sql, owners_sql, scope_sql
from app.store.sql import MEMORY_COLUMNS, MEMORY_SQL, model_literal, result_column
from app.vocabulary import PRESENT, Moment, Scope


def recall_scope(scope: Scope, moment: Moment = PRESENT) -> str:
    """The rows recall reads: the scope's live ones, or those current at another moment."""
    if moment.present:
        return scope_sql(scope, live=True, unexpired=True)
    return f"{scope_sql(scope)} AND {moment_sql(moment)}"


_TSQUERY = ", to_tsquery('english', :tsq) q"

# The predicate of the covering index ix_memories_scope_text and, negated, of ix_memories_scope_long
# (migration 0006), word for word: the rows whose index entry is sure to fit in a btree page.
_SHORT_TSV = (
    "(octet_length(content_tsv::text) + 4 * length(content_tsv)"
    " + octet_length(user_id) + octet_length(coalesce(project_id, '')) <= 2400)"
)

# What a candidate statement returns for each row `m` it loads (`r`: its id and BM25, 0 when its text
# does not match, and its matching passages' ordinals and BM25; `a`: its access, ACCESS_JOIN; `ps`: its
# passages), and its types.
CANDIDATE_SELECT = f"""SELECT {MEMORY_SQL}, m.content_tokens,
                       CASE WHEN m.embed_model = :embed_model AND m.embedding IS NOT NULL
                            THEN 1 - (m.embedding <=> CAST(:qvec AS vector)) END AS cosine,
                       coalesce(r.rank, 0) AS rank, coalesce(r.ideal, 0) AS ideal, r.p_matched,
                       r.p_matched_ranks, ps.*, nb.*"""
# Each candidate's passages (none: NULL arrays) with their cosine, one primary-key range each.
_PASSAGES_JOIN = """LEFT JOIN LATERAL (
                    SELECT array_agg(p.ordinal ORDER BY p.ordinal) AS p_ordinals,
                           array_agg(p.char_start ORDER BY p.ordinal) AS p_starts,
                           array_agg(p.char_end ORDER BY p.ordinal) AS p_ends,
                           array_agg(p.tokens ORDER BY p.ordinal) AS p_tokens,
                           array_agg(CASE WHEN p.embed_model = :embed_model AND p.embedding IS NOT NULL
                                          THEN 1 - (p.embedding <=> CAST(:qvec AS vector)) END
                                     ORDER BY p.ordinal) AS p_cosines
                    FROM memory_passages p WHERE p.tenant_id = m.tenant_id AND p.memory_id = m.id
                ) ps ON true"""
_NO_PASSAGES_JOIN = """CROSS JOIN (
                    SELECT NULL::smallint[] AS p_ordinals, NULL::int[] AS p_starts, NULL::int[] AS p_ends,
                           NULL::int[] AS p_tokens, NULL::float8[] AS p_cosines
                ) ps"""
# When each candidate's neighbours in its conversation were observed: the latest time before its own and
# the earliest after it among its user's live memories of its session (a forgotten or superseded message
# no longer stands between two turns), whatever the recall's scope or moment. NULL without a session or a
# neighbour. Each is one probe of the partial index ix_memories_session (migration 0013), which it reads
# alone: its predicate is the probe's `session_id` and `status` conditions.
_NEIGHBOURS_JOIN = f"""LEFT JOIN LATERAL (
                    SELECT (SELECT n.valid_from FROM memories n
                            WHERE n.tenant_id = m.tenant_id AND n.user_id = m.user_id
                              AND n.session_id IS NOT NULL AND n.session_id = m.session_id
                              AND {live_sql("n")} AND n.valid_from < m.valid_from
                            ORDER BY n.valid_from DESC LIMIT 1) AS prev_at,
                           (SELECT n.valid_from FROM memories n
                            WHERE n.tenant_id = m.tenant_id AND n.user_id = m.user_id
                              AND n.session_id IS NOT NULL AND n.session_id = m.session_id
                              AND {live_sql("n")} AND n.valid_from > m.valid_from
                            ORDER BY n.valid_from LIMIT 1) AS next_at
                    WHERE m.session_id IS NOT NULL
                ) nb ON true"""
_NO_NEIGHBOURS_JOIN = "CROSS JOIN (SELECT NULL::timestamptz AS prev_at, NULL::timestamptz AS next_at) nb"
CANDIDATE_RESULT = (
    *(result_column(c) for c in MEMORY_COLUMNS),
    column("content_tokens", Integer),
    column("cosine", Float),
    column("rank", Float),
    column("ideal", Float),
    *(column(c) for c in ("p_matched", "p_matched_ranks", "p_ordinals", "p_starts", "p_ends")),
    *(column(c) for c in ("p_tokens", "p_cosines")),
    column("prev_at", DateTime(timezone=True)),
    column("next_at", DateTime(timezone=True)),
)


@dataclass(frozen=True, slots=True)
class Shape:
    """What one recall's statements are built for: the scope, the moment, whether the query has words
    (`tsquery`), whether the scope has long memories (`passages`), whether candidates' neighbours
    count (`neighbours`) and whether the text half was read ahead (`keywords_read`)."""

    scope: Scope
    moment: Moment = PRESENT
    tsquery: bool = True
    passages: bool = True
    neighbours: bool = True
    keywords_read: bool = False  # the text half was read ahead: its top-k ids are a parameter

    @property
    def rows(self) -> str:
        return recall_scope(self.scope, self.moment)

    def passages_join(self) -> str:
        """The join (of a loaded memory `m`) that adds its passages' columns."""
        return _PASSAGES_JOIN if self.passages else _NO_PASSAGES_JOIN

    def neighbours_join(self) -> str:
        """The join (of a loaded memory `m`) that adds when its neighbours were observed, `prev_at` and
        `next_at` (NULL for every row when the policy gives neighbours no weight)."""
        return _NEIGHBOURS_JOIN if self.neighbours else _NO_NEIGHBOURS_JOIN

    def scope_matches(self) -> str:
        """The text half (CTEs `scored` and `kw`, app.store.bm25) on its own scan of the scope, which
        stops at `kw_cap` matches. Most rows are read from the covering index ix_memories_scope_text
        alone; rows too long for it, from the heap."""
        if self.keywords_read:
            return known_keyword_ctes(self.rows)
        if not self.tsquery:
            return NO_KEYWORD_CTES
        match = f"SELECT id, content_hash, content_tsv AS tsv FROM memories{_TSQUERY} WHERE {self.rows}"
        return bm25_ctes(
            f"""({match} AND {_SHORT_TSV} AND content_tsv @@ q
                 UNION ALL
                 {match} AND NOT {_SHORT_TSV} AND content_tsv @@ q) scope_matches""",
            self.passages,
        )

    def exact_sources(self) -> str:
        """Exact, two scans: the cosine half scans the scope (the distance expression does not match
        the index), the text half scans it again."""
        return f"""sem AS (
                    SELECT id FROM memories
                    WHERE {self.rows} AND embed_model = :embed_model AND embedding IS NOT NULL
                    ORDER BY embedding <=> CAST(:qvec AS vector), id LIMIT :k
                ), {self.scope_matches()}"""

    def index_sources(self, embed_model: str, dim: int) -> str:
        """The HNSW plan for large scopes: the index finds the cosine half, a scope scan the text half."""
        # Literals, not parameters, so the planner can match the per-model partial HNSW index.
        return f"""sem AS (
                    SELECT id FROM memories
                    WHERE {self.rows} AND embed_model = {model_literal(embed_model)}
                      AND embedding IS NOT NULL
                    ORDER BY embedding::vector({int(dim)}) <=> CAST(:qvec AS vector({int(dim)})) LIMIT :k
                ), {self.scope_matches()}"""

    def single_pass_sources(self) -> str:
        """Exact, for scopes up to `single_pass_max_rows` (off by default): one pass over the scope's
        rows computes each row's distance and text match and both halves come from it, so the rows are
        read once. Faster when few rows match (a 6k-row scope, 6% matching: 9 ms instead of 11, against
        5 ms for the cosine query alone); slower when many do, since it tests and carries every match
        where the text half's own scan stops at `kw_cap` matches (10k rows in one user: recall 19.8 ->
        25.7 ms), and past ~30k rows it spills out of work_mem (100k rows in one user: 129 -> 162 ms)."""
        # Not the indexed expression (no cast to the model's dimension): the planner scans exactly.
        return f"""scoped AS MATERIALIZED (
                    SELECT id, content_hash,
                           CASE WHEN content_tsv @@ q THEN content_tsv END AS tsv,
                           CASE WHEN embed_model = :embed_model AND embedding IS NOT NULL
                                THEN embedding <=> CAST(:qvec AS vector) END AS distance
                    FROM memories{_TSQUERY}
                    WHERE {self.rows}
                ), sem AS (
                    SELECT id FROM scoped WHERE distance IS NOT NULL ORDER BY distance, id LIMIT :k
                ), {bm25_ctes("scoped WHERE tsv IS NOT NULL", self.passages)}"""

    def text_stats(self) -> str:
        """BM25's N and mean length over the scope's units (a memory without passages is one, a long
        memory each of its passages), and how many long memories it has. Where the users have no
        passages (one probe), the one pass over the scope's rows it always was; else one pass over
        those rows and the users' passages, grouped by memory, with no join for a fresh table's
        estimates to turn into a scan per row. (A CTE no branch reads is never run.)"""
        owners = owners_sql(self.scope, table="p")
        return f"""WITH plain AS MATERIALIZED (
                    SELECT count(*) AS n, coalesce(avg(length(content_tsv)), 0)::float8 AS avgdl
                    FROM memories WHERE {self.rows}
                ), rows AS (
                    SELECT id, true AS in_scope, length(content_tsv) AS whole, 0 AS n, 0 AS len
                    FROM memories WHERE {self.rows}
                    UNION ALL
                    SELECT p.memory_id, false, 0, 1, length(p.content_tsv) FROM memory_passages p
                    WHERE p.tenant_id = :tenant AND {owners}
                ), per_memory AS (
                    SELECT sum(n) AS n, sum(len) AS len, max(whole) AS whole FROM rows
                    GROUP BY id HAVING bool_or(in_scope)
                ), grouped AS MATERIALIZED (
                    SELECT coalesce(sum(CASE WHEN n > 0 THEN n ELSE 1 END), 0) AS n,
                           coalesce(sum(CASE WHEN n > 0 THEN len ELSE whole END), 0) AS total,
                           count(*) FILTER (WHERE n > 0) AS long
                    FROM per_memory
                ), has AS (
                    SELECT EXISTS (
                        SELECT 1 FROM memory_passages p WHERE p.tenant_id = :tenant AND {owners}
                    ) AS yes
                )
                SELECT CASE WHEN has.yes THEN (SELECT n FROM grouped) ELSE (SELECT n FROM plain) END AS n,
                       CASE WHEN has.yes
                            THEN (SELECT CASE WHEN n > 0 THEN total::float8 / n ELSE 0 END FROM grouped)
                            ELSE (SELECT avgdl FROM plain) END AS avgdl,
                       CASE WHEN has.yes THEN (SELECT long FROM grouped) ELSE 0 END AS long
                FROM has"""


# A row's terms as of its last change (app/store/terms.py): its id hashed with its `terms_version`, a value
# no earlier row had, drawn anew on every insert and every change of its content, subject or passages by
# whichever transaction (migrations 0014-0015), so a row erased and imported again under its id differs.
# Both are in ix_memories_scope_rows, so a scope is listed from that index alone.
def _fingerprint(t: str) -> str:
    return f"uuid_hash_extended({t}.id, {t}.terms_version)"


# A tsvector's lexemes and their position counts (1 without positions), in its order.
_TERMS = """LATERAL (
                    SELECT array_agg(t.lexeme) AS lexemes,
                           array_agg(coalesce(cardinality(t.positions), 1)) AS counts
                    FROM unnest({tsv}) t
                ) terms"""


def term_listing(rows: str) -> str:
    """How many rows the scope has (counted up to `:cap`) and the sum of their fingerprints, with every
    row's id and fingerprint only when the two differ from what the index last saw (`:known_rows`,
    `:known_total`); and the query's lexemes as the text half stems them.

    For a scope within the index's limit (fewer than `:cap` rows), and unless the operator chose a
    `plan_cache_mode` other than `auto`, the statement also sets the transaction's later prepared
    statements to run on the plan each connection made once (noting that it did, for
    `sql.use_hnsw_scan` to undo): the candidate statement that follows then loads the index's ids and
    the cosine half without being planned again (or, while the scope's rows are still being read into
    the index, computes the text half itself, on its generic plan too).
    PostgreSQL's own choice planned it anew for every recall of a scope smaller than the table's average
    (a generic estimate above the custom ones), 1.4-2.1 ms of a 3.5 ms statement on BEAM, and a round
    trip of its own to say so cost 0.4 ms (docs/RANKING.md)."""
    return f"""WITH listed AS MATERIALIZED (
                    SELECT id, {_fingerprint("memories")} AS fingerprint FROM memories
                    WHERE {rows} LIMIT :cap
                ), summary AS (
                    SELECT count(*) AS n, coalesce(sum(fingerprint), 0) AS total FROM listed
                )
                SELECT summary.n, summary.total, changed.ids, changed.fingerprints,
                       (SELECT tsvector_to_array(to_tsvector('english', :words))) AS lexemes,
                       CASE WHEN summary.n < :cap AND current_setting('plan_cache_mode') = 'auto'
                            THEN concat(set_config('plan_cache_mode', 'force_generic_plan', true),
                                        set_config('engram.generic_plans', 'on', true)) END AS plans
                FROM summary LEFT JOIN LATERAL (
                    SELECT array_agg(id) AS ids, array_agg(fingerprint) AS fingerprints FROM listed
                ) changed ON summary.n <> :known_rows OR summary.total <> CAST(:known_total AS numeric)"""


# The terms of the first of `:ids` (in id order) whose content tokens add up to `:budget` (at least one),
# each memory with its fingerprint and content hash (ordinal NULL), and of their passages (with the
# ordinal).
UNIT_TERMS = f"""WITH chosen AS MATERIALIZED (
                     SELECT id FROM (
                         SELECT id, sum(coalesce(content_tokens, 100)) OVER (ORDER BY id) AS running,
                                coalesce(content_tokens, 100) AS own
                         FROM memories WHERE tenant_id = :tenant AND id = ANY (CAST(:ids AS uuid[]))
                     ) c WHERE running - own < :budget
                 )
                 SELECT m.id, {_fingerprint("m")} AS fingerprint, m.content_hash,
                        NULL::smallint AS ordinal, terms.lexemes, terms.counts
                 FROM memories m, {_TERMS.format(tsv="m.content_tsv")}
                 WHERE m.tenant_id = :tenant AND m.id IN (SELECT id FROM chosen)
                 UNION ALL
                 SELECT p.memory_id, NULL, NULL, p.ordinal, terms.lexemes, terms.counts
                 FROM memory_passages p, {_TERMS.format(tsv="p.content_tsv")}
                 WHERE p.tenant_id = :tenant AND p.memory_id IN (SELECT id FROM chosen)"""

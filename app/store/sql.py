"""SQL fragments more than one store module uses: how a memory's columns are read, vectors and model
names as SQL, the protected predicate, HNSW settings, and id lists as one parameter."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import TextClause, column, inspect, literal, text
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.expression import any_

from app.db.models import Memory, MemoryAccess
from app.store.records import RECORD_COLUMNS

# Every column the API shows (no embedding, no tsvector), plus the tenant and the content hash.
MEMORY_COLUMNS = RECORD_COLUMNS

# A memory's access count and time live in `memory_access` (`a`, joined by ACCESS_JOIN; no row: never).
_ACCESS_SQL = {
    "access_count": "coalesce(a.access_count, 0) AS access_count",
    "last_accessed_at": "a.last_accessed_at",
}
ACCESS_JOIN = "LEFT JOIN memory_access a ON a.tenant_id = m.tenant_id AND a.memory_id = m.id"

# Every column the API shows, as SQL over a memory `m` and its access `a` (joined by ACCESS_JOIN), and
# as the ORM maps them (a statement that loads `Memory` objects from such SQL).
MEMORY_SQL = ", ".join(_ACCESS_SQL.get(c, f"m.{c}") for c in MEMORY_COLUMNS)
MEMORY_ATTRIBUTES = [inspect(Memory).columns[c] for c in MEMORY_COLUMNS]

# Pinned memories and critical rules (app.vocabulary.is_protected) among live rows, written as the
# partial index ix_memories_always (migration 0004) is, word for word, so the planner uses it.
PROTECTED_SQL = "(status = 'pinned' OR (type = 'critical_rule' AND status = 'active'))"


def result_column(name: str) -> Any:
    """A memory column as typed for a text statement's result. `tags` is left untyped: asyncpg already
    returns a list of str, and SQLAlchemy's ARRAY processing cost 17 us a row (1.6 ms per large recall)."""
    if name == "tags":
        return column(name)
    if name in _ACCESS_SQL:
        return MemoryAccess.__table__.c[name]
    return Memory.__table__.c[name]


@lru_cache(maxsize=1024)
def statement(sql: str) -> TextClause:
    """`text(sql)`, parsed once per distinct text. Statements built from a scope's or a query's shape
    have few distinct texts (their values are parameters), and `text()` scans the whole text for bind
    parameters each time: 3% of a small recall's server CPU when built per request (bench.workers
    --profile)."""
    return text(sql)


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, bound as a parameter and cast in SQL."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def model_literal(embed_model: str) -> str:
    """The model as an SQL literal: the per-model partial HNSW indexes match a literal, not a parameter."""
    return "'" + embed_model.replace("'", "''") + "'"


def any_id(ids: Sequence[uuid.UUID]) -> Any:
    """`= ANY($1::uuid[])`: one parameter however many ids (asyncpg allows 32,767 per statement)."""
    return any_(literal(list(ids), ARRAY(UUID(as_uuid=True))))


async def use_hnsw_scan(session: AsyncSession, ef_search: int) -> None:
    """Filtered HNSW keeps scanning until enough rows pass the scope filter (pgvector 0.8). Prepared
    statements are planned as PostgreSQL chooses again where the term index's listing said otherwise
    (app.store.candidate_sql.term_listing, which does so only over `auto`): an index scan's plan reads
    its `LIMIT`. An operator's own `plan_cache_mode` is left as it is."""
    await session.execute(
        text(
            "SELECT set_config('hnsw.iterative_scan', 'strict_order', true), "
            "set_config('hnsw.ef_search', :ef, true), "
            "set_config('plan_cache_mode', CASE WHEN current_setting('engram.generic_plans', true) = 'on' "
            "THEN 'auto' ELSE current_setting('plan_cache_mode') END, true)"
        ),
        {"ef": str(ef_search)},
    )

"""The schema invariant that lets Engram shard by tenant (docs/SCALING.md), read from pg_catalog.

Distributed tables (every table with a `tenant_id` but the reference tables) must lead their primary
key, every unique constraint or unique index, every foreign key and every btree index with
`tenant_id`. Reference tables are small and read before a tenant is known (the API key lookup).
Indexes of other access methods (HNSW over a vector, GIN over a tsvector) cannot take a uuid column
first; Citus builds them per shard, so they need no distribution column.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

REFERENCE_TABLES = frozenset({"tenants", "api_keys"})
BOOKKEEPING = frozenset({"alembic_version"})
TENANT = "tenant_id"


@dataclass(frozen=True)
class Violation:
    table: str
    what: str
    name: str
    columns: tuple[str | None, ...]


async def violations(conn: AsyncConnection, schema: str = "public") -> list[Violation]:
    tables = await _tables(conn, schema)
    distributed = {t for t, cols in tables.items() if TENANT in cols} - REFERENCE_TABLES
    found = [
        Violation(t, "table neither distributed (no tenant_id) nor a reference table", t, ())
        for t in tables
        if t not in distributed | REFERENCE_TABLES | BOOKKEEPING
    ]
    for table, name, method, primary, unique, columns in await _indexes(conn, schema):
        if table not in distributed or columns[:1] == (TENANT,):
            continue
        if primary or unique:
            found.append(Violation(table, "primary key" if primary else "unique index", name, columns))
        elif method == "btree":
            found.append(Violation(table, "btree index", name, columns))
    for table, name, columns, target, target_columns in await _foreign_keys(conn, schema):
        if table not in distributed:
            continue
        colocated = target in REFERENCE_TABLES or target_columns[:1] == (TENANT,)
        if columns[:1] != (TENANT,) or not colocated:
            found.append(Violation(table, "foreign key", name, columns))
    return found


async def _tables(conn: AsyncConnection, schema: str) -> dict[str, set[str]]:
    rows = await conn.execute(
        text(
            "SELECT c.relname, a.attname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
            " WHERE n.nspname = :s AND c.relkind IN ('r', 'p')"
        ),
        {"s": schema},
    )
    tables: dict[str, set[str]] = {}
    for table, column in rows:
        tables.setdefault(table, set()).add(column)
    return tables


async def _indexes(
    conn: AsyncConnection, schema: str
) -> list[tuple[str, str, str, bool, bool, tuple[str | None, ...]]]:
    # Key columns in index order; an expression key (attnum 0) is None.
    rows = await conn.execute(
        text(
            "SELECT t.relname, i.relname, am.amname, x.indisprimary, x.indisunique,"
            " array(SELECT a.attname FROM unnest(x.indkey[0:x.indnkeyatts - 1]) WITH ORDINALITY k(n, o)"
            "       LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.n ORDER BY k.o)"
            " FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid"
            " JOIN pg_am am ON am.oid = i.relam JOIN pg_namespace n ON n.oid = t.relnamespace"
            " WHERE n.nspname = :s"
        ),
        {"s": schema},
    )
    return [(t, i, m, p, u, tuple(cols)) for t, i, m, p, u, cols in rows]


async def _foreign_keys(
    conn: AsyncConnection, schema: str
) -> list[tuple[str, str, tuple[str, ...], str, tuple[str, ...]]]:
    rows = await conn.execute(
        text(
            "SELECT t.relname, c.conname,"
            " array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, o)"
            "       JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o),"
            " r.relname,"
            " array(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k(n, o)"
            "       JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o)"
            " FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid"
            " JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = :s AND c.contype = 'f'"
        ),
        {"s": schema},
    )
    return [(t, c, tuple(cols), r, tuple(rcols)) for t, c, cols, r, rcols in rows]

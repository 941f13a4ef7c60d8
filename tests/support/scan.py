"""Scan every text-like column of every table (found through information_schema) for strings.

Used by the erase and redaction tests: "no text column of any table contains X" must hold for tables
added later too, so the columns are discovered, not listed.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

# Everything that can hold text: plain and varying text, JSON, arrays (tags, ids) and the tsvector.
TEXT_TYPES = ("text", "character varying", "character", "json", "jsonb", "ARRAY", "tsvector")


@dataclass
class ScanResult:
    hits: list[str] = field(default_factory=list)  # "table.column: needle"
    rows: Counter[str] = field(default_factory=Counter)  # rows scanned per table
    columns: list[str] = field(default_factory=list)


async def scan_text_columns(engine: AsyncEngine, tenant_id: uuid.UUID, needles: Iterable[str]) -> ScanResult:
    """Every text-like value of the tenant's rows (all rows of tables without a tenant), case-insensitive."""
    wanted = [(n, n.lower()) for n in needles if n]
    result = ScanResult()
    async with engine.connect() as conn, conn.begin():
        # Bound to the tenant, so the scan sees its rows even where RLS applies to the owner.
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant_id)})
        columns = (
            await conn.execute(
                text(
                    "SELECT table_name, column_name FROM information_schema.columns "
                    "WHERE table_schema = 'public' AND data_type = ANY(:types) ORDER BY table_name, column_name"
                ),
                {"types": list(TEXT_TYPES)},
            )
        ).all()
        tenant_column = {
            row.table_name: row.column_name
            for row in (
                await conn.execute(
                    text(
                        "SELECT table_name, column_name FROM information_schema.columns "
                        "WHERE table_schema = 'public' AND column_name = 'tenant_id'"
                    )
                )
            ).all()
        }
        tenant_column["tenants"] = "id"
        for table, column in columns:
            result.columns.append(f"{table}.{column}")
            where = f' WHERE "{tenant_column[table]}" = :t' if table in tenant_column else ""
            rows = await conn.execute(
                text(f'SELECT "{column}"::text FROM "{table}"{where}'), {"t": tenant_id}
            )
            for (value,) in rows:
                result.rows[table] += 1
                lowered = (value or "").lower()
                result.hits += [f"{table}.{column}: {n}" for n, low in wanted if low in lowered]
    return result

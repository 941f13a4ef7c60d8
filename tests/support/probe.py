"""Every content written to `memories` and `messages` of the test database, kept by a trigger in a
schema of its own (outside `public`, so the scans of every table of the service never see it).

The log sink (`tests/support/logsink.py`) fails the run if any of these strings was logged; a trigger
sees every write, including rows that a later test erased.
"""

from __future__ import annotations

import asyncio

import asyncpg

from app.db.urls import to_asyncpg_dsn

INSTALL = """
CREATE SCHEMA IF NOT EXISTS engram_test_probe;
CREATE TABLE IF NOT EXISTS engram_test_probe.written (content text NOT NULL);
CREATE OR REPLACE FUNCTION engram_test_probe.note() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO engram_test_probe.written (content) VALUES (NEW.content);
    RETURN NEW;
END $$;
CREATE OR REPLACE TRIGGER engram_test_probe AFTER INSERT OR UPDATE OF content ON public.memories
    FOR EACH ROW EXECUTE FUNCTION engram_test_probe.note();
CREATE OR REPLACE TRIGGER engram_test_probe AFTER INSERT OR UPDATE OF content ON public.messages
    FOR EACH ROW EXECUTE FUNCTION engram_test_probe.note();
"""


async def _run(owner_url: str, sql: str) -> list[str]:
    conn = await asyncpg.connect(to_asyncpg_dsn(owner_url))
    try:
        if sql == "read":
            return [r[0] for r in await conn.fetch("SELECT DISTINCT content FROM engram_test_probe.written")]
        await conn.execute(sql)
        return []
    finally:
        await conn.close()


def install_probe(owner_url: str) -> None:
    asyncio.run(_run(owner_url, INSTALL))


def written_contents(owner_url: str) -> list[str]:
    return asyncio.run(_run(owner_url, "read"))

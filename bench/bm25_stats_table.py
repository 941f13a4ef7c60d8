"""What a BM25 statistics table kept by writes would cost them: a prototype, measured.

    python -m bench.bm25_stats_table [--writes 2000] [--writers 1,8]

Recall computes BM25's statistics at query time (app/store/bm25.py). The alternative keeps them in
tables written with every memory: one df row per (scope, lexeme) and one (N, total length) row per
scope, updated in the writing transaction. This prototype measures that on scratch tables of a throwaway
embedded PostgreSQL (never the service's schema): commits per second of single-row writes of ~20-word
texts into one scope, with and without the statistics upserts, from 1 and from several concurrent
writers (the df rows of common words and the scope's row are hot: every writer of the scope updates
them and holds their locks until it commits). Results go to bench/results/bm25-stats-table/.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.session import create_engine
from bench.common import bench_database, machine, write_results

_SETUP = [
    "DROP TABLE IF EXISTS proto_rows, proto_df, proto_scope",
    "CREATE TABLE proto_rows (id bigserial PRIMARY KEY, scope text NOT NULL, content text NOT NULL,"
    " tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED)",
    "CREATE INDEX ON proto_rows USING gin (tsv)",
    "CREATE TABLE proto_df (scope text, lexeme text, df integer NOT NULL, PRIMARY KEY (scope, lexeme))",
    "CREATE TABLE proto_scope (scope text PRIMARY KEY, n integer NOT NULL, total bigint NOT NULL)",
]
_INSERT = text("INSERT INTO proto_rows (scope, content) VALUES (:scope, :content) RETURNING tsv")
_DF = text(
    """INSERT INTO proto_df (scope, lexeme, df)
       SELECT :scope, lexeme, 1 FROM unnest(CAST(:tsv AS tsvector))
       ORDER BY lexeme  -- one lock order for every writer, so concurrent upserts cannot deadlock
       ON CONFLICT (scope, lexeme) DO UPDATE SET df = proto_df.df + 1"""
)
_SCOPE = text(
    """INSERT INTO proto_scope VALUES (:scope, 1, length(CAST(:tsv AS tsvector)))
       ON CONFLICT (scope) DO UPDATE
       SET n = proto_scope.n + 1, total = proto_scope.total + excluded.total"""
)


def _texts(count: int, seed: int = 7) -> list[str]:
    """Chat-like texts: ~20 words from a Zipf-distributed vocabulary of 3,000 (a few words in most
    texts, most words rare), as in conversation turns."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}x" for i in range(3000)]
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    return [" ".join(rng.choices(vocabulary, weights, k=rng.randint(12, 28))) for _ in range(count)]


async def _writer(engine: AsyncEngine, texts: list[str], stats: bool) -> None:
    for content in texts:
        async with engine.begin() as conn:
            tsv = (await conn.execute(_INSERT, {"scope": "u", "content": content})).scalar_one()
            if stats:
                await conn.execute(_DF, {"scope": "u", "tsv": tsv})
                await conn.execute(_SCOPE, {"scope": "u", "tsv": tsv})


async def _run(engine: AsyncEngine, texts: list[str], writers: int, stats: bool) -> dict[str, Any]:
    async with engine.begin() as conn:
        for statement in _SETUP:
            await conn.execute(text(statement))
    shares = [texts[i::writers] for i in range(writers)]
    started = time.perf_counter()
    await asyncio.gather(*(_writer(engine, share, stats) for share in shares))
    seconds = time.perf_counter() - started
    async with engine.connect() as conn:
        df_rows = await conn.scalar(text("SELECT count(*) FROM proto_df"))
    return {
        "writers": writers,
        "stats_table": stats,
        "writes": len(texts),
        "writes_per_s": round(len(texts) / seconds, 1),
        "ms_per_write": round(seconds * 1000 * writers / len(texts), 2),
        "df_rows": df_rows,
    }


async def _measure(owner_url: str, texts: list[str], writer_counts: list[int]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    engine = create_engine(owner_url, pool_size=max(writer_counts), max_overflow=0)
    try:
        for writers in writer_counts:
            for stats in (False, True):
                rows.append(await _run(engine, texts, writers, stats))
                print(rows[-1])
    finally:
        await engine.dispose()
    return rows


def main(writes: int, writer_counts: list[int]) -> None:
    with bench_database() as (owner_url, _):  # migrations run their own event loop: outside ours
        rows = asyncio.run(_measure(owner_url, _texts(writes), writer_counts))
    lines = [
        "| writers | statistics table | writes/s | ms per write (per writer) |",
        "|---:|---|---:|---:|",
        *(
            f"| {r['writers']} | {'yes' if r['stats_table'] else 'no'} | {r['writes_per_s']} | "
            f"{r['ms_per_write']} |"
            for r in rows
        ),
    ]
    out = write_results("bm25-stats-table", {"machine": machine(), "runs": rows}, "\n".join(lines) + "\n")
    print("\n".join(lines))
    print(out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--writers", default="1,8")
    args = parser.parse_args()
    main(args.writes, [int(w) for w in args.writers.split(",")])

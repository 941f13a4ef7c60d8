"""Synthetic memories at scale: realistic text lengths over a Zipfian vocabulary, hash embeddings,
loaded with PostgreSQL COPY (which is also the write floor the service is compared against)."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg
from pgvector.asyncpg import register_vector

from app.embeddings.hashing import HashEmbedder
from app.memory.lines import content_tokens
from app.memory.slots import content_hash

TYPES = ("fact", "preference", "decision", "episodic", "task", "constraint", "project", "identity")
COLUMNS = (
    "tenant_id", "id", "user_id", "type", "content", "status", "importance", "salience", "confidence",
    "privacy", "created_at", "updated_at", "valid_from", "source", "embed_model",
    "embedding", "content_hash", "content_tokens",
)  # fmt: skip
SYLLABLES = ("ka", "lo", "mi", "ren", "tor", "vel", "sa", "qu", "dor", "fin", "bra", "zel", "po", "nu", "ect")


def vocabulary(size: int, seed: int = 11) -> list[str]:
    """`size` pronounceable pseudo-words; used with Zipf weights they behave like a real lexicon."""
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


@dataclass
class TextGenerator:
    """Sentences of 6-60 words; word frequencies follow Zipf's law (s = 1.1) from rank 50 on.

    The head of a real lexicon is stopwords, which the full-text configuration drops; starting the
    distribution at rank 50 models the content words that are left.
    """

    seed: int = 7
    vocab_size: int = 5000
    rng: random.Random = field(init=False)
    words: list[str] = field(init=False)
    weights: list[float] = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.words = vocabulary(self.vocab_size)
        self.weights = [1.0 / ((rank + 50) ** 1.1) for rank in range(1, self.vocab_size + 1)]

    def sentence(self, low: int = 6, high: int = 60) -> str:
        n = int(self.rng.triangular(low, high, 14))
        return " ".join(self.rng.choices(self.words, self.weights, k=n)).capitalize() + "."

    def query(self) -> str:
        return " ".join(self.rng.choices(self.words, self.weights, k=self.rng.randint(3, 9)))


@dataclass(frozen=True)
class Scope:
    tenant: uuid.UUID
    user_id: str
    size: int


@dataclass
class Dataset:
    tenants: list[uuid.UUID]
    scopes: list[Scope]  # every (tenant, user) with its row count
    rows: int


def layout(total: int, tenants: int, users_per_tenant: int, seed: int = 3) -> list[Scope]:
    """Split `total` rows over tenants x users with a long tail (a few large scopes, many small)."""
    rng = random.Random(seed)
    tenant_ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(tenants)]
    weights = [rng.paretovariate(1.5) for _ in range(tenants * users_per_tenant)]
    scale = total / sum(weights)
    scopes, assigned = [], 0
    for i, w in enumerate(weights):
        size = max(1, round(w * scale))
        scopes.append(Scope(tenant_ids[i // users_per_tenant], f"user-{i % users_per_tenant}", size))
        assigned += size
    # Adjust the largest scope so the total is exact.
    largest = max(range(len(scopes)), key=lambda i: scopes[i].size)
    fixed = scopes[largest]
    scopes[largest] = Scope(fixed.tenant, fixed.user_id, max(1, fixed.size + total - assigned))
    return scopes


def records(scopes: list[Scope], text: TextGenerator, embedder: HashEmbedder) -> Iterator[tuple[object, ...]]:
    """COPY records for every scope (hash embeddings and token counts computed here, as the service
    computes them when it writes, not in the database)."""
    now = datetime.now(UTC)
    for scope in scopes:
        for _ in range(scope.size):
            content = text.sentence()
            when = now - timedelta(days=text.rng.random() * 365)
            yield (
                scope.tenant, uuid.uuid4(), scope.user_id, text.rng.choice(TYPES), content, "active",
                round(text.rng.random(), 3), 1.0, 0.8, "public", when, when, when, "import",
                embedder.name, embedder.embed_text(content), content_hash(content), content_tokens(content),
            )  # fmt: skip


async def create_tenants(conn: asyncpg.Connection, tenants: list[uuid.UUID]) -> None:
    await conn.executemany(
        "INSERT INTO tenants (id, name) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        [(t, f"perf-{t.hex[:12]}") for t in tenants],
    )


HNSW_INDEX = "ix_memories_hnsw_hash_v1_384"


async def bulk_load(
    owner_dsn: str, scopes: list[Scope], text: TextGenerator, embedder: HashEmbedder
) -> float:
    """Set up the dataset fast: COPY without the HNSW index, then build it once. Returns build seconds."""
    conn = await asyncpg.connect(owner_dsn)
    try:
        await register_vector(conn)
        await create_tenants(conn, sorted({s.tenant for s in scopes}, key=str))
        definition = await conn.fetchval("SELECT pg_get_indexdef($1::regclass)", HNSW_INDEX)
        await conn.execute(f"DROP INDEX {HNSW_INDEX}")
        batch: list[tuple[object, ...]] = []
        for record in records(scopes, text, embedder):
            batch.append(record)
            if len(batch) == 20000:
                await _copy(conn, batch)
                batch = []
        if batch:
            await _copy(conn, batch)
        started = time.perf_counter()
        await conn.execute("SET maintenance_work_mem = '4GB'")
        await conn.execute(definition)
        elapsed = time.perf_counter() - started
        # Measure the steady state, not the aftermath of a bulk load: set hint bits and the visibility
        # map now and flush the dirty pages, so neither autovacuum nor the checkpointer runs during the
        # measurements (they would slow the floor and the service alike, at random).
        await conn.execute("VACUUM (ANALYZE) memories")
        await conn.execute("CHECKPOINT")
        return elapsed
    finally:
        await conn.close()


async def copy_floor(
    owner_dsn: str, scope: Scope, text: TextGenerator, embedder: HashEmbedder, n: int
) -> float:
    """COPY rows/s into the loaded table with every index in place: the write floor for the service."""
    conn = await asyncpg.connect(owner_dsn)
    try:
        await register_vector(conn)
        batch = list(records([Scope(scope.tenant, scope.user_id, n)], text, embedder))
        return n / await _copy(conn, batch)
    finally:
        await conn.close()


async def _copy(conn: asyncpg.Connection, batch: list[tuple[object, ...]]) -> float:
    started = time.perf_counter()
    await conn.copy_records_to_table("memories", records=batch, columns=COLUMNS)
    return time.perf_counter() - started

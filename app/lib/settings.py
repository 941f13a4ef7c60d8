"""One typed settings object, read from the environment when asked for (never at import time)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.lib.jsonbody import DEFAULT_MAX_JSON_DEPTH

EmbedderName = Literal["auto", "hash", "local", "openai"]
# How the local model runs: onnxruntime on a local export (falls back to torch if it fails), or torch.
LocalRuntime = Literal["onnx", "torch"]

DASHSCOPE_INTL_BASE_URL = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"

# Half-lives in days; None means the type never decays (DESIGN.md: preference, identity, critical_rule).
DEFAULT_HALF_LIVES: dict[str, float | None] = {
    "identity": None,
    "preference": None,
    "critical_rule": None,
    "constraint": 365.0,
    "decision": 180.0,
    "fact": 120.0,
    "project": 120.0,
    "learning_goal": 90.0,
    "mistake": 90.0,
    "task": 30.0,
    "deadline": 30.0,
    "episodic": 30.0,
    "temporary": 1.0,
}

# Additive ranking prior per type: rules and constraints that gate decisions rank above chatter.
DEFAULT_TYPE_PRIORS: dict[str, float] = {
    "critical_rule": 0.10,
    "constraint": 0.08,
    "identity": 0.06,
    "preference": 0.05,
    "decision": 0.05,
    "deadline": 0.05,
    "project": 0.03,
    "fact": 0.03,
    "task": 0.03,
    "learning_goal": 0.02,
    "mistake": 0.03,
    "temporary": 0.02,
    "episodic": 0.0,
}


class ScoringWeights(BaseSettings):
    """Weights of the recall score components (DESIGN.md, read path step 3)."""

    model_config = SettingsConfigDict(env_prefix="ENGRAM_WEIGHT_", extra="ignore")

    semantic: float = 0.50
    keyword: float = 0.20
    recency: float = 0.05
    # A memory never recalled decays its salience from valid_from: for it salience is a second recency
    # term. At 0.10 the two gave recent turns up to +0.15, more than typical cosine gaps; 0.05 lifted
    # evidence recall on LoCoMo/BEAM (bench.quality, docs/BENCHMARKS.md "Quality benchmark") at every budget.
    salience: float = 0.05
    importance: float = 0.10
    confidence: float = 0.05
    project_match: float = 0.05
    pinned_bonus: float = 0.10
    privacy_penalty: float = 0.10


class Settings(BaseSettings):
    """Everything Engram reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="ENGRAM_", extra="ignore", populate_by_name=True)

    # Database. DATABASE_URL is the owner's URL (migrations, administration); the service itself
    # connects as a separate non-owner, non-superuser role so row-level security applies to it.
    database_url: str | None = Field(default=None, validation_alias=AliasChoices("DATABASE_URL"))
    app_database_url: str | None = Field(default=None, validation_alias=AliasChoices("APP_DATABASE_URL"))
    app_db_password: SecretStr | None = None
    data_dir: Path = Path(".engram")
    # Connections per process. No overflow by default: past the pool, requests queue in order for a
    # connection instead of adding queries that compete for the same cores (64 clients on 2 cores,
    # recall p99: 12.4 s with 20 + 50 overflow, 3.7 s with 10 + 10, 2.4 s with 8 + 0).
    db_pool_size: int = 10
    db_max_overflow: int = 0

    # Embeddings and models.
    embedder: EmbedderName = "auto"
    hash_dim: int = 384
    dashscope_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DASHSCOPE_API_KEY", "ENGRAM_DASHSCOPE_API_KEY")
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "ENGRAM_OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "ENGRAM_OPENAI_BASE_URL")
    )
    chat_model: str | None = None
    embed_model: str | None = None
    embed_dim: int | None = None
    model_timeout_s: float = 30.0
    model_max_retries: int = 2
    # Recent single-text embeddings kept per process (keyed by model and text): a repeated query within
    # the TTL skips the model. 0 entries: no cache.
    query_cache_size: int = Field(default=1024, ge=0)
    query_cache_ttl_s: float = Field(default=60.0, gt=0)
    # Intra-op threads of the local model's runtime (torch's are process-wide; 0: the runtime's
    # default, one per core). One by default: on a busy 2-core box two threads spinning against the
    # event loop, PostgreSQL and each other made a one-query encode 655 ms against 82 ms with one
    # (load average 12).
    local_threads: int = Field(default=1, ge=0)
    # Model calls one large encode (a batch remember, an import, a re-embed) runs at once, each on
    # `local_threads` threads; 0: one per CPU core. A query is one call and stays on one thread. With
    # the ONNX runtime, 100 facts of ~97 tokens: 11.7 ms a fact one call at a time, 6.1 two at once
    # (2 cores; two intra-op threads in one call: 8.6).
    local_parallel_calls: int = Field(default=0, ge=0)
    # The local model's runtime: `onnx` (an export of the installed weights made on first use under
    # data_dir/models, checked against torch; torch with a warning if it cannot be used) or `torch`.
    local_runtime: LocalRuntime = "onnx"

    # Memory engine.
    max_content_chars: int = 8000
    max_body_bytes: int = 1024 * 1024
    # Nesting of arrays and objects a JSON body may have, checked on its bytes before decoding (an
    # export is 4 deep; ~1,000 levels make a recursive decoder raise).
    max_json_depth: int = Field(default=DEFAULT_MAX_JSON_DEPTH, ge=2, le=500)
    max_import_bytes: int = 64 * 1024 * 1024  # POST /v1/import only: an export carries embeddings
    reembed_batch_size: int = 256  # rows per embedding call (and per commit in `engram reembed`)
    default_token_budget: int = 1024
    candidate_k: int = 50
    keyword_max_matches: int = 1000  # full-text matches ranked per recall (bounds broad OR queries)
    exact_scan_max_rows: int = (
        200_000  # above this many live rows in scope, HNSW (approximate) instead of exact
    )
    # Exact recall can read a scope up to this size in one pass for both halves instead of two scans. Off
    # by default: it wins when few rows match the words (6k-row scope, 6% matching: statement 11.7 -> 9.4
    # ms) and loses when many do, since it tests and carries every match where the text half's own scan
    # stops at keyword_max_matches (10k rows in one user: recall p50 19.8 -> 25.7 ms); past ~30k rows it
    # also spills out of work_mem.
    single_pass_max_rows: int = 0
    # From this many live rows in scope, recall's text half runs on a spare connection beside the cosine
    # half instead of after it in the same statement (0: always, when a spare connection is free).
    spare_keyword_min_rows: int = Field(default=2000, ge=0)
    spare_connections: int = Field(default=2, ge=0)  # the spare pool's size (0: no spare reads)
    # Recall's text half from the process's index of each scope's terms (app/store/terms.py) for scopes
    # of up to this many rows (0: always in SQL); the index holds at most term_index_units units (a
    # memory, or a passage of a long one; ~0.8-1.4 kB each on the development sets) over all scopes, the
    # least recently recalled dropped first. A scope's rows are read into it on a spare connection apart
    # from the recall when one is free (all of them, term_index_read_tokens content tokens a statement),
    # else by the recall itself, up to term_index_read_tokens content tokens (until all are read, the
    # statement answers): 2,000 left BEAM's long-turn scopes (~266k tokens) to the statement for a third
    # of their recalls in the quality bench (docs/RANKING.md).
    term_index_max_rows: int = Field(default=5000, ge=0)
    term_index_units: int = Field(default=50_000, ge=0)
    term_index_read_tokens: int = Field(default=16_000, ge=1)
    # The write path's nearest-memory check (semantic supersession, a heuristic): exact up to this many
    # rows in scope, HNSW past it. Recall's candidates follow exact_scan_max_rows instead.
    write_exact_scan_max_rows: int = 5000
    hnsw_ef_search: int = 100  # HNSW candidate list size (higher: closer to exact, slower)
    hnsw_min_share: float = 0.02  # HNSW only when the scope is at least this share of the table
    min_relevance: float | None = None  # None: the embedder's own floor
    # The BM25 at which the `weighted` fusion's keyword component is 0.5: about one match of a word in a
    # few percent of the scope's rows. (The relevance floor compares the keyword coverage instead,
    # app.memory.similarity.)
    keyword_saturation: float = Field(default=2.0, gt=0)
    bm25_k1: float = Field(default=1.2, ge=0)
    bm25_b: float = Field(default=0.75, ge=0, le=1)
    # How cosine and BM25 combine (app/memory/fusion.py; docs/RANKING.md measures them). None: the
    # embedder's (`Embedder.fusion`: minmax for sentence embedders, normalised for the hash embedder).
    fusion: Literal["weighted", "normalised", "minmax", "rrf"] | None = None
    rrf_k: int = Field(default=60, ge=1)
    fused_semantic_weight: float = 0.35  # the normalised, minmax and rrf fusions' weights
    fused_keyword_weight: float = 0.35
    # What a memory's neighbours in its session add to its score: this times their best relevance share
    # (docs/RANKING.md, "Session neighbours"; 0: nothing).
    neighbour_weight: float = Field(default=0.15, ge=0, le=1)
    # The share of a recall's budget that standing memories (pinned, critical rules, constraints) may
    # take whatever the question, the most relevant first (a rule that says when it applies, below the
    # floor, only its relevance's fraction of it); past it they compete on relevance like any memory.
    standing_share: float = Field(default=0.25, ge=0, le=1)
    # A memory longer than this many tokens is also stored as passages of at most this many (0: none):
    # recall ranks it by its best passage and may return that passage (docs/RANKING.md, "Passages").
    passage_tokens: int = Field(default=100, ge=0, le=4096)
    # How the packer spends a budget on long memories: `passages` (each memory's best passage first, then
    # whole memories with what is left) or `whole` (the whole memory when it fits, else its passage).
    passage_packing: Literal["passages", "whole"] = "passages"
    recency_half_life_days: float = 30.0
    temporary_ttl_seconds: int = 86400
    # Forget-by-query forgets the memory recall ranks first among those whose similarity
    # (app.memory.similarity) reaches this. None: halfway between recall's floor and the embedder's
    # review threshold (app.memory.similarity.forget_floor). Was ENGRAM_FORGET_QUERY_MIN_COSINE.
    forget_query_min_similarity: float | None = Field(
        default=None,
        ge=0,
        le=1,
        validation_alias=AliasChoices("ENGRAM_FORGET_QUERY_MIN_SIMILARITY", "ENGRAM_FORGET_QUERY_MIN_COSINE"),
    )
    half_lives: dict[str, float | None] = Field(default_factory=lambda: dict(DEFAULT_HALF_LIVES))
    type_priors: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_TYPE_PRIORS))
    weights: ScoringWeights = Field(default_factory=ScoringWeights)

    # Lifecycle (sweep) and dreaming.
    maintenance_interval_s: float = Field(default=0.0, ge=0)  # 0: no periodic sweep in the service
    # Recall's reinforcement is batched and written every this many seconds; 0: inside each recall.
    reinforce_interval_s: float = Field(default=1.0, ge=0)
    archive_after_days: float = Field(default=90.0, ge=0)  # cold: unused this long (0: never archive)
    archive_importance_below: float = Field(default=0.3, ge=0, le=1)  # ... and less important than this
    dream_max_memories: int = Field(default=300, ge=1)  # most recent live memories a dream looks at
    # The offline dreamer proposes merging memories whose similarity (app.memory.similarity) reaches
    # this. None: the embedder's review threshold. Was ENGRAM_DREAM_MERGE_MIN_COSINE.
    dream_merge_min_similarity: float | None = Field(
        default=None,
        ge=0,
        le=1,
        validation_alias=AliasChoices("ENGRAM_DREAM_MERGE_MIN_SIMILARITY", "ENGRAM_DREAM_MERGE_MIN_COSINE"),
    )
    dream_forget_importance_below: float = Field(default=0.3, ge=0, le=1)
    dream_forget_decayed_below: float = Field(default=0.05, ge=0, le=1)  # decayed salience floor

    # Agent loop.
    agent_max_turns: int = 4
    agent_degrade_to_offline: bool = True  # False: a provider failure is a 503 instead of `degraded`
    chat_history_turns: int = 6
    extract_max_messages: int = 50

    # Commands that call a running service (`engram remember|recall`); the SDK reads the same variables.
    client_url: str = Field(default="http://localhost:8000", validation_alias=AliasChoices("ENGRAM_URL"))
    client_api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("ENGRAM_API_KEY"))

    # MCP (`/mcp` over streamable HTTP, `engram mcp` over stdio). DNS-rebinding protection: a request
    # whose Host (or Origin, when sent) is not listed is refused; patterns may end in ":*" (any port).
    mcp_allowed_hosts: str = "127.0.0.1:*,localhost:*,[::1]:*"  # comma-separated
    mcp_allowed_origins: str = "http://127.0.0.1:*,http://localhost:*,http://[::1]:*"  # comma-separated
    # Whose memories an MCP session reads and writes when it does not say (`X-Engram-User` header or
    # `?user_id=` on /mcp, `--user` for `engram mcp`).
    mcp_user: str = Field(default="default", min_length=1, max_length=200)

    # Per-tenant limits (issue 23). Defaults for every tenant; `engram tenant limits` sets a tenant's
    # own. 0: unlimited. Enforced in PostgreSQL, so every process of the service shares them.
    tenant_requests_per_minute: int = Field(default=6000, ge=0)  # a token bucket, burst = this many
    tenant_concurrent_requests: int = Field(default=32, ge=0)  # in flight at once, all processes
    tenant_max_memories: int = Field(default=1_000_000, ge=0)  # memories stored (every status)
    tenant_tokens_per_day: int = Field(default=5_000_000, ge=0)  # model tokens over the last 24 h
    # A request over the concurrency cap (or waiting for a turn of its worker) waits this long for one
    # before it is refused with a 429: a short burst queues instead of failing.
    limit_queue_s: float = Field(default=5.0, ge=0)
    # Fairness (app/lib/fairness.py): requests of one worker doing their work at once; a freed slot
    # goes to the waiting tenant with the fewest in flight, so one tenant's load cannot queue another
    # tenant's requests behind its own. Waiting requests hold no connection. 0: no cap.
    worker_slots: int = Field(default=4, ge=0)
    limits_pool_size: int = Field(default=2, ge=1)  # autocommit connections for the request buckets
    # A connection has this long to send a whole request head (from when it opens, and after each
    # response); past it, it is closed (slow-header clients cannot hold connections open).
    header_timeout_s: float = Field(default=10.0, gt=0)

    # Change events: webhooks (app/webhooks/) and the live stream.
    # Every worker delivers due webhook events every this many seconds (0: this process never delivers).
    webhook_interval_s: float = Field(default=1.0, ge=0)
    webhook_timeout_s: float = Field(default=10.0, gt=0)  # one delivery attempt's HTTP timeout
    webhook_max_attempts: int = Field(default=8, ge=1)  # then the delivery is a dead letter
    webhook_backoff_base_s: float = Field(default=2.0, gt=0)  # retry n waits base * 2^(n-1), jittered
    webhook_backoff_max_s: float = Field(default=3600.0, gt=0)
    webhook_allow_private: bool = False  # True: webhooks may target loopback and private addresses
    # Secrets of webhooks are derived from this key and the webhook's id (unset: a key kept in
    # ENGRAM_DATA_DIR/webhook-signing-key, created on first use); every replica must share it.
    webhook_signing_key: SecretStr | None = None
    event_stream_poll_s: float = Field(default=1.0, gt=0)  # GET /v1/events/stream reads new events this often

    # Runtime.
    workers: int = Field(default=0, ge=0)  # `engram serve` worker processes; 0: one per CPU
    log_level: str = "INFO"
    log_json: bool = True
    # OpenTelemetry: an OTLP/HTTP traces endpoint (e.g. http://collector:4318/v1/traces); empty: no tracing.
    otel_endpoint: str = ""
    otel_service_name: str = "engram"

    def tenant_limits_enabled(self) -> bool:
        """Whether the service admits requests at all (every limit 0 and no worker slots: no admission)."""
        limits = (
            self.tenant_requests_per_minute,
            self.tenant_concurrent_requests,
            self.tenant_max_memories,
            self.tenant_tokens_per_day,
        )
        return any(limits) or self.worker_slots > 0

    def local_parallel(self) -> int:
        """`local_parallel_calls`, with 0 resolved to the CPU count."""
        return self.local_parallel_calls or max(1, os.cpu_count() or 1)

    def resolved_embedder(self, local_available: bool) -> EmbedderName:
        """Which embedder `auto` means here: a configured endpoint, else the local model, else hashing."""
        if self.embedder != "auto":
            return self.embedder
        if self.dashscope_api_key or self.openai_api_key:
            return "openai"
        return "local" if local_available else "hash"

    def model_base_url(self) -> str | None:
        """The OpenAI-compatible endpoint: explicit, else DashScope international when its key is set."""
        if self.openai_base_url:
            return self.openai_base_url
        if self.dashscope_api_key and not self.openai_api_key:
            return DASHSCOPE_INTL_BASE_URL
        return None

    def model_api_key(self) -> str | None:
        key = self.openai_api_key or self.dashscope_api_key
        return key.get_secret_value() if key else None

    def default_chat_model(self) -> str:
        if self.chat_model:
            return self.chat_model
        return "qwen-plus" if self.dashscope_api_key and not self.openai_api_key else "gpt-4o-mini"

    def default_embed_model(self) -> str:
        if self.embed_model:
            return self.embed_model
        if self.dashscope_api_key and not self.openai_api_key:
            return "text-embedding-v3"
        return "text-embedding-3-small"

    def mcp_hosts(self) -> list[str]:
        return [h.strip() for h in self.mcp_allowed_hosts.split(",") if h.strip()]

    def mcp_origins(self) -> list[str]:
        return [o.strip() for o in self.mcp_allowed_origins.split(",") if o.strip()]

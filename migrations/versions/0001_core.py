"""Core schema: tenants, API keys, memories, events, dream proposals; row-level security; service role.

Revision ID: 0001_core
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql as pg

revision: str = "0001_core"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "engram_app"
TENANT_TABLES = ("memories", "memory_events", "dream_proposals")
MEMORY_TYPES = (
    "identity",
    "preference",
    "fact",
    "decision",
    "constraint",
    "critical_rule",
    "project",
    "task",
    "deadline",
    "learning_goal",
    "mistake",
    "episodic",
    "temporary",
)
# Partial HNSW indexes, one per known embed model and its dimension (the column itself is an
# unconstrained `vector`, so a model swap to another dimension needs no table rewrite).
HNSW_MODELS = {
    "hash_v1_384": ("hash-v1-384", 384),
    "minilm_l6": ("all-MiniLM-L6-v2", 384),
    "dashscope_v3": ("text-embedding-v3", 1024),
    "openai_3_small": ("text-embedding-3-small", 1536),
}


def _in(values: Sequence[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def _uuid(name: str, **kw: object) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, pg.UUID(as_uuid=True), **kw)  # type: ignore[arg-type]


def _ts(name: str, nullable: bool = True, default: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(
        name, sa.DateTime(timezone=True), nullable=nullable, server_default=sa.func.now() if default else None
    )


def _tenant_fk() -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE")


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(
        f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
            END IF;
        END $$"""
    )
    op.execute(
        """CREATE FUNCTION engram_current_tenant() RETURNS uuid LANGUAGE sql STABLE AS
           $$ SELECT nullif(current_setting('app.tenant_id', true), '')::uuid $$"""
    )

    op.create_table(
        "tenants",
        _uuid("id", primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("settings", pg.JSONB, nullable=False, server_default="{}"),
        _ts("created_at", nullable=False, default=True),
    )
    op.create_table(
        "api_keys",
        _uuid("tenant_id", nullable=False),
        _uuid("id", nullable=False),
        sa.Column("prefix", sa.String(32), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("name", sa.String(200), nullable=False),
        _ts("created_at", nullable=False, default=True),
        _ts("last_used_at"),
        _ts("revoked_at"),
        sa.PrimaryKeyConstraint("tenant_id", "id"),
        _tenant_fk(),
    )
    op.create_table(
        "memories",
        _uuid("tenant_id", nullable=False),
        _uuid("id", nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("project_id", sa.String(200)),
        sa.Column("session_id", sa.String(200)),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("subject", sa.String(200)),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("summary", sa.Text),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("importance", sa.Float, nullable=False),
        sa.Column("salience", sa.Float, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("privacy", sa.String(16), nullable=False),
        sa.Column("tags", pg.ARRAY(sa.Text), nullable=False, server_default="{}"),
        _ts("created_at", nullable=False, default=True),
        _ts("updated_at", nullable=False, default=True),
        _ts("valid_from", nullable=False, default=True),
        _ts("valid_to"),
        _ts("expires_at"),
        _ts("last_accessed_at"),
        sa.Column("access_count", sa.Integer, nullable=False, server_default="0"),
        _uuid("supersedes"),
        _uuid("superseded_by"),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("source_model", sa.String(200)),
        _uuid("source_message_id"),
        sa.Column("embed_model", sa.String(200)),
        sa.Column("embedding", Vector()),
        sa.Column(
            "content_tsv",
            pg.TSVECTOR,
            sa.Computed("to_tsvector('english', coalesce(subject, '') || ' ' || content)", persisted=True),
        ),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "id"),
        _tenant_fk(),
        sa.CheckConstraint(f"type IN ({_in(MEMORY_TYPES)})", name="type"),
        sa.CheckConstraint(
            "status IN ('active', 'pinned', 'superseded', 'archived', 'expired', 'forgotten')", name="status"
        ),
        sa.CheckConstraint("privacy IN ('public', 'private', 'sensitive')", name="privacy"),
        sa.CheckConstraint("source IN ('agent', 'api', 'extract', 'import', 'dream')", name="source"),
        sa.CheckConstraint("importance BETWEEN 0 AND 1", name="importance"),
        sa.CheckConstraint("salience BETWEEN 0 AND 1", name="salience"),
        sa.CheckConstraint("confidence BETWEEN 0 AND 1", name="confidence"),
    )
    # Recall reinforces (access_count, last_accessed_at) on every hit; free space on each page lets
    # those updates be HOT, so they do not insert new entries into every index (HNSW included).
    op.execute("ALTER TABLE memories SET (fillfactor = 70)")
    op.create_index("ix_memories_scope", "memories", ["tenant_id", "user_id", "status", "project_id"])
    op.create_index(
        "ix_memories_slot",
        "memories",
        ["tenant_id", "user_id", "subject", "type"],
        postgresql_where=sa.text("subject IS NOT NULL AND status IN ('active', 'pinned')"),
    )
    op.create_index("ix_memories_hash", "memories", ["tenant_id", "user_id", "content_hash"])
    op.create_index(
        "ix_memories_listing",
        "memories",
        ["tenant_id", "user_id", sa.text("created_at DESC"), sa.text("id DESC")],
    )
    op.create_index("ix_memories_tsv", "memories", ["content_tsv"], postgresql_using="gin")
    for suffix, (model, dim) in HNSW_MODELS.items():
        op.execute(
            f"CREATE INDEX ix_memories_hnsw_{suffix} ON memories USING hnsw "
            f"((embedding::vector({dim})) vector_cosine_ops) WHERE embed_model = '{model}'"
        )

    op.create_table(
        "memory_events",
        _uuid("tenant_id", nullable=False),
        sa.Column("id", sa.BigInteger, sa.Identity(always=False), nullable=False),
        _uuid("memory_id"),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("project_id", sa.String(200)),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("details", pg.JSONB, nullable=False, server_default="{}"),
        _ts("created_at", nullable=False, default=True),
        sa.PrimaryKeyConstraint("tenant_id", "id"),
        _tenant_fk(),
    )
    op.create_index("ix_memory_events_memory", "memory_events", ["tenant_id", "memory_id"])
    op.create_index(
        "ix_memory_events_user_time", "memory_events", ["tenant_id", "user_id", sa.text("created_at DESC")]
    )

    op.create_table(
        "dream_proposals",
        _uuid("tenant_id", nullable=False),
        _uuid("id", nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("project_id", sa.String(200)),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("target_ids", pg.ARRAY(pg.UUID(as_uuid=True)), nullable=False),
        sa.Column("payload", pg.JSONB, nullable=False, server_default="{}"),
        sa.Column("rationale", sa.Text),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("model", sa.String(200)),
        _ts("created_at", nullable=False, default=True),
        _ts("decided_at"),
        _ts("applied_at"),
        sa.PrimaryKeyConstraint("tenant_id", "id"),
        _tenant_fk(),
        sa.CheckConstraint("kind IN ('merge', 'forget', 'resalience', 'supersede')", name="kind"),
        sa.CheckConstraint(
            "status IN ('proposed', 'approved', 'rejected', 'applied', 'stale')", name="status"
        ),
    )
    op.create_index("ix_dream_proposals_user_status", "dream_proposals", ["tenant_id", "user_id", "status"])

    _enable_rls()
    _grant_service_role()
    _create_authenticate_function()


def _enable_rls() -> None:
    for table in TENANT_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            "USING (tenant_id = engram_current_tenant()) WITH CHECK (tenant_id = engram_current_tenant())"
        )
    # Tenants and keys: the service sees only its own tenant; the owner (administration CLI and the
    # key-lookup function below) manages all of them.
    for table, column in (("tenants", "id"), ("api_keys", "tenant_id")):
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} TO {APP_ROLE} "
            f"USING ({column} = engram_current_tenant()) WITH CHECK ({column} = engram_current_tenant())"
        )
        op.execute(f"CREATE POLICY owner_admin ON {table} TO CURRENT_USER USING (true) WITH CHECK (true)")


def _grant_service_role() -> None:
    op.execute(f"GRANT USAGE ON SCHEMA public TO {APP_ROLE}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(TENANT_TABLES)} TO {APP_ROLE}")
    op.execute(f"GRANT SELECT ON tenants, api_keys, alembic_version TO {APP_ROLE}")
    op.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {APP_ROLE}")


def _create_authenticate_function() -> None:
    # Runs as the owner so a key can be resolved before any tenant is known; returns only the
    # tenant of a live key. last_used_at is written at most once a minute to avoid a hot row.
    op.execute(
        """CREATE FUNCTION engram_authenticate(p_key_hash text)
           RETURNS TABLE (tenant_id uuid, key_id uuid)
           LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
             WITH k AS (
               SELECT a.tenant_id, a.id, a.last_used_at FROM api_keys a
               WHERE a.key_hash = p_key_hash AND a.revoked_at IS NULL
             ), touched AS (
               UPDATE api_keys a SET last_used_at = now() FROM k
               WHERE a.tenant_id = k.tenant_id AND a.id = k.id
                 AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '60 seconds')
             )
             SELECT k.tenant_id, k.id FROM k
           $$"""
    )
    op.execute("REVOKE ALL ON FUNCTION engram_authenticate(text) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION engram_authenticate(text) TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS engram_authenticate(text)")
    for table in ("dream_proposals", "memory_events", "memories", "api_keys", "tenants"):
        op.drop_table(table)
    op.execute("DROP FUNCTION IF EXISTS engram_current_tenant()")

"""Per-tenant limits: one row per tenant holding its overrides and its request bucket.

The row is created by the first request that is admitted (or by `engram tenant limits`); a column left
NULL takes the service's default (settings). The bucket (`bucket_tokens`, `bucket_at`) is a token bucket
of capacity requests_per_minute refilled at requests_per_minute / 60 per second. `engram_admit` refills
and takes from it in one UPDATE of this row, called outside the request's transaction (autocommit), so the
row lock lasts one statement and every process of the service shares the one bucket.

Revision ID: 0009_tenant_limits
Revises: 0008_memory_access
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0009_tenant_limits"
down_revision: str | None = "0008_memory_access"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "engram_app"

# The level after refilling (the capacity is the rate per minute; a new row starts full).
_LEVEL = "LEAST(rpm, COALESCE(l.bucket_tokens, rpm) + EXTRACT(EPOCH FROM now_ts - l.bucket_at) * rpm / 60.0)"

ADMIT = f"""
CREATE FUNCTION engram_admit(
    p_tenant uuid, p_requests_per_minute integer, p_concurrent_requests integer,
    p_max_memories bigint, p_tokens_per_day bigint
) RETURNS TABLE (
    retry_after_s double precision, requests_per_minute integer, concurrent_requests integer,
    max_memories bigint, tokens_per_day bigint, bucket_tokens double precision
) LANGUAGE plpgsql AS $$
DECLARE
    now_ts timestamptz := clock_timestamp();
    rpm integer;
    row_found boolean;
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant::text, true);
    SELECT COALESCE(l.requests_per_minute, p_requests_per_minute) INTO rpm
        FROM tenant_limits l WHERE l.tenant_id = p_tenant;
    row_found := FOUND;
    IF NOT row_found THEN
        rpm := p_requests_per_minute;
        INSERT INTO tenant_limits (tenant_id, bucket_tokens, bucket_at)
            VALUES (p_tenant, NULL, now_ts) ON CONFLICT (tenant_id) DO NOTHING;
    END IF;
    IF rpm > 0 THEN
        -- Refill and take one request in one statement; a refused request takes nothing.
        UPDATE tenant_limits l SET
            bucket_tokens = CASE WHEN {_LEVEL} >= 1 THEN {_LEVEL} - 1 ELSE {_LEVEL} END,
            bucket_refused = {_LEVEL} < 1,
            bucket_at = now_ts
        WHERE l.tenant_id = p_tenant;
    END IF;
    RETURN QUERY
        SELECT CASE WHEN rpm > 0 AND l.bucket_refused THEN (1 - l.bucket_tokens) * 60.0 / rpm ELSE 0 END,
               rpm,
               COALESCE(l.concurrent_requests, p_concurrent_requests),
               COALESCE(l.max_memories, p_max_memories),
               COALESCE(l.tokens_per_day, p_tokens_per_day),
               CASE WHEN rpm > 0 THEN l.bucket_tokens END
        FROM tenant_limits l WHERE l.tenant_id = p_tenant;
END
$$"""


# A concurrency slot, taken in the statement that authenticates the request (no round trip of its own):
# the first free one of the tenant's n, as a transaction-level advisory lock (two int4 keys: a key space
# apart from the write path's bigint slot locks). EXISTS stops at the first lock taken. Returns 0 when
# the tenant has no cap, n when a slot was taken, -n when all n are held.
CLAIM = """
CREATE FUNCTION engram_claim_slot(p_tenant uuid, p_default integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant::text, true);
    SELECT COALESCE(l.concurrent_requests, p_default) INTO n FROM tenant_limits l WHERE l.tenant_id = p_tenant;
    IF NOT FOUND THEN
        n := p_default;
    END IF;
    IF n <= 0 THEN
        RETURN 0;
    END IF;
    IF EXISTS (
        SELECT 1 FROM generate_series(1, n) AS s WHERE pg_try_advisory_xact_lock(hashtext(p_tenant::text), s)
    ) THEN
        RETURN n;
    END IF;
    RETURN -n;
END
$$"""


def upgrade() -> None:
    op.create_table(
        "tenant_limits",
        sa.Column("tenant_id", pg.UUID(as_uuid=True), nullable=False),
        # Overrides set with `engram tenant limits`; NULL: the service's default. 0: unlimited.
        sa.Column("requests_per_minute", sa.Integer),
        sa.Column("concurrent_requests", sa.Integer),
        sa.Column("max_memories", sa.BigInteger),
        sa.Column("tokens_per_day", sa.BigInteger),
        # The request bucket (NULL tokens: full).
        sa.Column("bucket_tokens", sa.Float),
        sa.Column("bucket_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("bucket_refused", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.PrimaryKeyConstraint("tenant_id"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        *(
            sa.CheckConstraint(f"{column} IS NULL OR {column} >= 0", name=f"{column}_not_negative")
            for column in ("requests_per_minute", "concurrent_requests", "max_memories", "tokens_per_day")
        ),
        # Room on each page for the row's next version: the bucket's update stays HOT.
        postgresql_with={"fillfactor": 50},
    )
    op.execute("ALTER TABLE tenant_limits ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE tenant_limits FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON tenant_limits "
        "USING (tenant_id = engram_current_tenant()) WITH CHECK (tenant_id = engram_current_tenant())"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_limits TO {APP_ROLE}")
    op.execute(ADMIT)
    op.execute(CLAIM)
    op.execute("REVOKE ALL ON FUNCTION engram_claim_slot(uuid, integer) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION engram_claim_slot(uuid, integer) TO {APP_ROLE}")
    op.execute("REVOKE ALL ON FUNCTION engram_admit(uuid, integer, integer, bigint, bigint) FROM PUBLIC")
    op.execute(
        f"GRANT EXECUTE ON FUNCTION engram_admit(uuid, integer, integer, bigint, bigint) TO {APP_ROLE}"
    )


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS engram_claim_slot(uuid, integer)")
    op.execute("DROP FUNCTION IF EXISTS engram_admit(uuid, integer, integer, bigint, bigint)")
    op.drop_table("tenant_limits")

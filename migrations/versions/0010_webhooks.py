"""Change events out of the service: per-tenant webhooks and a transactional outbox of deliveries.

`webhooks` holds each endpoint (no secret: its signing secret is derived from the service's signing
key and the webhook's id, so a copy of the database cannot sign). `webhook_deliveries` is the outbox:
one row per (webhook, event), written by a statement-level trigger on `memory_events` in the
transaction that records the event, so an event is delivered if and only if its change committed. A row
carries a snapshot of the event with no content (ids, kind, actor, time and a few non-content details),
so erasing a memory or a user leaves no text behind in the outbox, and a pending delivery survives the
erase of the event it announces.

Events copied by an import keep their original time (older than the importing transaction): they are
history, not news, and are not fanned out; the import's own `imported` events are.

The deliverer finds tenants with due deliveries through `engram_webhook_due_tenants` (SECURITY
DEFINER, returns tenant ids only, through a SELECT-only policy for the owner) and then claims and
reads each tenant's rows in a transaction bound to that tenant, like every other statement.

Revision ID: 0010_webhooks
Revises: 0008_memory_access (the limits helper adds 0009; the chain is rebased at merge)
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0010_webhooks"
down_revision: str | None = "0009_tenant_limits"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "engram_app"
TABLES = ("webhooks", "webhook_deliveries")

# The event snapshot a delivery carries: no content, no reason. Mirrored by
# app/webhooks/payload.py SNAPSHOT_DETAILS for the live stream.
FAN_OUT = """
CREATE FUNCTION engram_fan_out_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_id, kind, event, next_attempt_at)
  SELECT e.tenant_id, w.id, e.id, e.kind,
         jsonb_strip_nulls(jsonb_build_object(
           'memory_id', e.memory_id, 'user_id', e.user_id, 'project_id', e.project_id,
           'kind', e.kind, 'actor', e.actor, 'at', e.created_at,
           'details', jsonb_strip_nulls(jsonb_build_object(
             'successor', e.details -> 'successor', 'rule', e.details -> 'rule',
             'source', e.details -> 'source', 'type', e.details -> 'type',
             'proposal_id', e.details -> 'proposal_id', 'proposal_kind', e.details -> 'proposal_kind',
             'targets', e.details -> 'targets')))),
         now()
  FROM new_events e
  JOIN webhooks w ON w.tenant_id = e.tenant_id
  WHERE w.active AND e.created_at >= now()
    AND (cardinality(w.event_types) = 0 OR e.kind = ANY (w.event_types))
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$
"""


def upgrade() -> None:
    op.create_table(
        "webhooks",
        sa.Column("tenant_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("description", sa.String(200)),
        sa.Column("event_types", pg.ARRAY(sa.Text), nullable=False, server_default="{}"),
        sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("tenant_id", "id"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("tenant_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("id", sa.BigInteger, sa.Identity(always=False), nullable=False),
        sa.Column("webhook_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("event_id", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("event", pg.JSONB, nullable=False),
        sa.Column("state", sa.String(16), nullable=False, server_default="pending"),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_attempt_at", sa.DateTime(timezone=True)),
        sa.Column("last_status", sa.Integer),
        sa.Column("last_error", sa.String(200)),
        sa.Column("delivered_at", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("tenant_id", "id"),
        sa.UniqueConstraint("tenant_id", "webhook_id", "event_id"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "webhook_id"], ["webhooks.tenant_id", "webhooks.id"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.CheckConstraint("state IN ('pending', 'delivered', 'dead')", name="state"),
    )
    op.create_index(
        "ix_webhook_deliveries_due",
        "webhook_deliveries",
        ["tenant_id", "next_attempt_at"],
        postgresql_where=sa.text("state = 'pending'"),
    )
    op.create_index(
        "ix_webhook_deliveries_dead",
        "webhook_deliveries",
        ["tenant_id", "created_at", "id"],
        postgresql_where=sa.text("state = 'dead'"),
    )
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            "USING (tenant_id = engram_current_tenant()) WITH CHECK (tenant_id = engram_current_tenant())"
        )
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE}")
    op.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {APP_ROLE}")
    # The due-tenants function runs as the owner, which FORCE row-level security binds too: it reads
    # (never writes) deliveries of every tenant, and returns only tenant ids.
    op.execute("CREATE POLICY owner_due ON webhook_deliveries FOR SELECT TO CURRENT_USER USING (true)")
    op.execute(
        """CREATE FUNCTION engram_webhook_due_tenants(p_limit integer)
           RETURNS SETOF uuid LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
             SELECT DISTINCT d.tenant_id FROM webhook_deliveries d
             WHERE d.state = 'pending' AND d.next_attempt_at <= now() LIMIT p_limit
           $$"""
    )
    op.execute("REVOKE ALL ON FUNCTION engram_webhook_due_tenants(integer) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION engram_webhook_due_tenants(integer) TO {APP_ROLE}")
    op.execute(FAN_OUT)
    op.execute(
        "CREATE TRIGGER memory_events_fan_out AFTER INSERT ON memory_events "
        "REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION engram_fan_out_events()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS memory_events_fan_out ON memory_events")
    op.execute("DROP FUNCTION IF EXISTS engram_fan_out_events()")
    op.execute("DROP FUNCTION IF EXISTS engram_webhook_due_tenants(integer)")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhooks")

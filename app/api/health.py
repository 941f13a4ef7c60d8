"""Liveness and readiness (no auth: they reveal nothing about tenants)."""

from __future__ import annotations

from litestar import Controller, Response, get
from litestar.datastructures import State
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.migrate import head_revision


class HealthController(Controller):
    path = "/"
    tags = ["health"]

    @get("/health")
    async def health(self) -> dict[str, str]:
        return {"status": "ok"}

    @get("/ready")
    async def ready(self, state: State) -> Response[dict[str, str | None]]:
        engine: AsyncEngine = state.engine
        try:
            async with engine.connect() as conn:
                current = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        except (SQLAlchemyError, OSError) as exc:
            return Response({"status": "unavailable", "detail": type(exc).__name__}, status_code=503)
        head = head_revision()
        if current != head:
            return Response(
                {"status": "migrations_pending", "current": current, "head": head}, status_code=503
            )
        return Response({"status": "ready", "migration": current})

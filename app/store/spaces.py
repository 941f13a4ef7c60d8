"""Shared spaces and the agents granted on them: add, list, get, grant, revoke."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Space, SpaceGrant
from app.tenancy.types import TenantId

MAX_SPACES = 1000  # a list returns at most this many (spaces are few: teams and projects)


class SpaceStore:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def add(self, name: str, *, description: str | None, auto_approve: bool, by: str) -> Space | None:
        """The new space, or None when the tenant already has one of that name (nothing changed)."""
        statement = (
            insert(Space)
            .values(
                tenant_id=self.tenant,
                name=name,
                description=description,
                auto_approve=auto_approve,
                created_by=by,
            )
            .on_conflict_do_nothing()
            .returning(Space)
        )
        return (await self.session.scalars(statement)).first()

    async def get(self, name: str) -> Space | None:
        query = select(Space).where(Space.tenant_id == self.tenant, Space.name == name)
        return (await self.session.scalars(query)).first()

    async def all(self) -> list[Space]:
        query = select(Space).where(Space.tenant_id == self.tenant).order_by(Space.name).limit(MAX_SPACES)
        return list((await self.session.scalars(query)).all())

    async def grants(self, names: list[str]) -> list[SpaceGrant]:
        """The grants of these spaces, by space then agent."""
        query = (
            select(SpaceGrant)
            .where(SpaceGrant.tenant_id == self.tenant, SpaceGrant.space.in_(names))
            .order_by(SpaceGrant.space, SpaceGrant.agent_id)
        )
        return list((await self.session.scalars(query)).all())

    async def grant_of(self, space: str, agent_id: str) -> SpaceGrant | None:
        query = select(SpaceGrant).where(
            SpaceGrant.tenant_id == self.tenant, SpaceGrant.space == space, SpaceGrant.agent_id == agent_id
        )
        return (await self.session.scalars(query)).first()

    async def grant(self, space: str, agent_id: str, *, can_propose: bool, by: str) -> SpaceGrant:
        """Grant an agent on a space, or change its grant (one row per space and agent)."""
        values = {
            "tenant_id": self.tenant,
            "space": space,
            "agent_id": agent_id,
            "can_propose": can_propose,
            "granted_by": by,
        }
        statement = (
            insert(SpaceGrant)
            .values(**values)
            .on_conflict_do_update(
                index_elements=["tenant_id", "space", "agent_id"],
                set_={"can_propose": can_propose, "granted_by": by},
            )
            .returning(SpaceGrant)
            .execution_options(populate_existing=True)
        )
        return (await self.session.scalars(statement)).one()

    async def revoke(self, space: str, agent_id: str) -> SpaceGrant | None:
        """The revoked grant, or None when there was none."""
        statement = (
            delete(SpaceGrant)
            .where(
                SpaceGrant.tenant_id == self.tenant,
                SpaceGrant.space == space,
                SpaceGrant.agent_id == agent_id,
            )
            .returning(SpaceGrant)
        )
        return (await self.session.scalars(statement)).first()

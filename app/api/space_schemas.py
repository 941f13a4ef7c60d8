"""Payloads of /v1/spaces (shared spaces, their grants, promotions into them)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec

from app.api.schemas import NO_NUL, Ident, Strict
from app.db.models import SpaceGrant
from app.spaces.service import SpaceView

# A space's name is a path segment and a label: letters, digits, '_', '.', '-'.
SPACE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
SpaceName = Annotated[str, msgspec.Meta(min_length=1, max_length=100, pattern=SPACE_NAME)]
Description = Annotated[str, msgspec.Meta(max_length=200, pattern=NO_NUL)]


class SpaceIn(Strict):
    name: SpaceName
    description: Description | None = None
    auto_approve: bool = False  # the tenant's policy: promotions into this space need no person


class GrantIn(Strict):
    agent_id: Ident
    can_propose: bool = True


class PromotionIn(Strict):
    memory_id: uuid.UUID
    agent_id: Ident  # the proposing agent: granted on the space, and the memory is its own or its user's


class GrantOut(msgspec.Struct, kw_only=True):
    space: str
    agent_id: str
    can_propose: bool
    granted_by: str
    created_at: datetime

    @classmethod
    def of(cls, g: SpaceGrant) -> GrantOut:
        return cls(**{f: getattr(g, f) for f in cls.__struct_fields__})


class SpaceOut(msgspec.Struct, kw_only=True):
    name: str
    description: str | None
    auto_approve: bool
    created_by: str
    created_at: datetime
    grants: list[GrantOut]

    @classmethod
    def of(cls, view: SpaceView) -> SpaceOut:
        s = view.space
        return cls(
            name=s.name,
            description=s.description,
            auto_approve=s.auto_approve,
            created_by=s.created_by,
            created_at=s.created_at,
            grants=[GrantOut.of(g) for g in view.grants],
        )


class SpaceList(msgspec.Struct, kw_only=True):
    items: list[SpaceOut]

"""/v1/users and /v1/projects: the user ids of the tenant and the project ids of a user, to pick from.

`GET /v1/projects?user_id=` rather than `/v1/users/{user_id}/projects`: a user id may hold a '/', which a
path cannot carry, and every other per-user read (`/v1/memories`, `/v1/timeline`, `/v1/stats`) takes the
user in the query too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec
from litestar import Controller, get
from litestar.di import NamedDependency, Provide
from litestar.params import QueryParameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.api.guards import require_bearer
from app.api.memories import Limit, QueryIdent
from app.api.schemas import NO_NUL
from app.lib.cursor import decode_key_cursor, encode_key_cursor
from app.store.directory import Directory, Holding
from app.tenancy.auth import Principal

# A cursor carries a whole identifier (up to 200 characters, 4 bytes each in UTF-8) in base64.
Cursor = Annotated[str | None, QueryParameter(max_length=1100, pattern=NO_NUL)]


class UserOut(msgspec.Struct, kw_only=True):
    user_id: str
    memories: int  # every stored memory, whatever its status
    live: int  # active or pinned: what recall can return


class UserPage(msgspec.Struct, kw_only=True):
    items: list[UserOut]
    next_cursor: str | None


class ProjectOut(msgspec.Struct, kw_only=True):
    project_id: str
    memories: int
    live: int


class ProjectPage(msgspec.Struct, kw_only=True):
    items: list[ProjectOut]
    next_cursor: str | None


def _page(rows: Sequence[Holding], limit: int) -> tuple[Sequence[Holding], str | None]:
    """The store returns one row past the page when more follow; it is not shown, it only says so."""
    if len(rows) > limit:
        return rows[:limit], encode_key_cursor(rows[limit - 1].key)
    return rows, None


async def provide_directory(
    principal: NamedDependency[Principal], transaction: NamedDependency[AsyncSession]
) -> Directory:
    return Directory(transaction, principal.tenant)


Users = NamedDependency[Directory]


class DirectoryController(Controller):
    path = "/v1"
    guards = [require_bearer]
    tags = ["directory"]
    dependencies = {"directory": Provide(provide_directory)}

    @get("/users", description="The tenant's user ids (those with a stored memory), in order, with counts.")
    async def users(self, directory: Users, limit: Limit = 50, cursor: Cursor = None) -> UserPage:
        rows = await directory.users(after=decode_key_cursor(cursor) if cursor else None, limit=limit)
        shown, next_cursor = _page(rows, limit)
        return UserPage(
            items=[UserOut(user_id=r.key, memories=r.memories, live=r.live) for r in shown],
            next_cursor=next_cursor,
        )

    @get("/projects", description="A user's project ids, in order, with counts (global memories are none).")
    async def projects(
        self, directory: Users, user_id: QueryIdent, limit: Limit = 50, cursor: Cursor = None
    ) -> ProjectPage:
        after = decode_key_cursor(cursor) if cursor else None
        rows = await directory.projects(user_id, after=after, limit=limit)
        shown, next_cursor = _page(rows, limit)
        return ProjectPage(
            items=[ProjectOut(project_id=r.key, memories=r.memories, live=r.live) for r in shown],
            next_cursor=next_cursor,
        )

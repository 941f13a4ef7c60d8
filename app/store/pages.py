"""Keyset pagination, newest first, over (created_at, id): every list of the API pages this way.

A cursor is the last row's key, opaque to clients (base64 of `created_at|id`); a cursor this service
did not return is a 422, never a 500.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, and_, or_
from sqlalchemy.ext.asyncio import AsyncSession

from app.lib.errors import ValidationFailed

MAX_PAGE = 500
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Keyset:
    """Where a page starts (after the row with this key; None: the newest row) and how long it is."""

    after: tuple[datetime, Any] | None
    limit: int

    @classmethod
    def parse(cls, cursor: str | None, limit: int, id_type: type[uuid.UUID] | type[int]) -> Keyset:
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationFailed(f"limit must be between 1 and {MAX_PAGE}")
        return cls(None if cursor is None else _decode(cursor, id_type), limit)


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def encode_cursor(created_at: datetime, row_id: object) -> str:
    return base64.urlsafe_b64encode(f"{created_at.isoformat()}|{row_id}".encode()).decode()


def _decode(cursor: str, id_type: type[uuid.UUID] | type[int]) -> tuple[datetime, Any]:
    try:
        created, _, row_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        when = datetime.fromisoformat(created)
        if when.tzinfo is None:
            raise ValueError("naive time")
        return when, id_type(row_id)
    except ValueError as exc:  # binascii.Error and UnicodeDecodeError are ValueErrors too
        raise ValidationFailed("cursor is not one this service returned") from exc


async def keyset_page(session: AsyncSession, query: Select[Any], model: Any, keyset: Keyset) -> Page[Any]:
    """One page of `query` (which selects `model`, a table with created_at and id), newest first."""
    if keyset.after is not None:
        created, row_id = keyset.after
        query = query.where(
            or_(model.created_at < created, and_(model.created_at == created, model.id < row_id))
        )
    query = query.order_by(model.created_at.desc(), model.id.desc()).limit(keyset.limit + 1)
    rows = list((await session.scalars(query)).all())
    more = len(rows) > keyset.limit
    rows = rows[: keyset.limit]
    return Page(rows, encode_cursor(rows[-1].created_at, rows[-1].id) if more else None)

"""Payloads of /v1/webhooks and the event stream."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

import msgspec

from app.api.schemas import NO_NUL, Strict
from app.db.models import Webhook, WebhookDelivery
from app.vocabulary import EventKind

Url = Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
Description = Annotated[str, msgspec.Meta(max_length=200, pattern=NO_NUL)]
EventKinds = Annotated[list[EventKind], msgspec.Meta(max_length=64)]


class WebhookIn(Strict):
    url: Url
    description: Description | None = None
    event_types: EventKinds = msgspec.field(default_factory=list)  # empty: every kind


class WebhookOut(msgspec.Struct, kw_only=True):
    id: uuid.UUID
    url: str
    description: str | None
    event_types: list[str]
    active: bool
    created_at: datetime

    @classmethod
    def of(cls, hook: Webhook) -> WebhookOut:
        return cls(**{f: getattr(hook, f) for f in cls.__struct_fields__})


class WebhookCreated(msgspec.Struct, kw_only=True):
    webhook: WebhookOut
    secret: str  # shown once: the receiver verifies Engram-Signature with it


class WebhookList(msgspec.Struct, kw_only=True):
    items: list[WebhookOut]


class DeliveryOut(msgspec.Struct, kw_only=True):
    id: int
    webhook_id: uuid.UUID
    event_id: int
    kind: str
    event: dict[str, Any]
    state: str
    attempts: int
    next_attempt_at: datetime
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None
    created_at: datetime

    @classmethod
    def of(cls, d: WebhookDelivery) -> DeliveryOut:
        return cls(**{f: getattr(d, f) for f in cls.__struct_fields__})


class DeliveryPage(msgspec.Struct, kw_only=True):
    items: list[DeliveryOut]
    next_cursor: str | None

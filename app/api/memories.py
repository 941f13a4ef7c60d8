"""/v1/memories, /v1/recall, /v1/forget, /v1/stats: HTTP <-> memory service, nothing else."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from litestar import Controller, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter

from app.api.convert import history_out, recall_input, recall_out, remember_input, remember_out
from app.api.guards import require_bearer
from app.api.schemas import (
    NO_NUL,
    BatchIn,
    BatchOut,
    EraseReceipt,
    ForgetIn,
    ForgottenOut,
    HistoryOut,
    MemoryIn,
    MemoryOut,
    MemoryPage,
    MemoryPatch,
    RecallIn,
    RecallOut,
    RememberOut,
    StatsOut,
)
from app.memory.models import ForgetFilter
from app.memory.service import MemoryService
from app.privacy.erase import Eraser
from app.vocabulary import AsOfKind, MemoryStatus, MemoryType

Service = NamedDependency[MemoryService]
MemoryId = FromPath[uuid.UUID]
Limit = Annotated[int, QueryParameter(ge=1, le=500)]
QueryIdent = Annotated[str, QueryParameter(max_length=200, pattern=NO_NUL)]
# Constraints must sit on the optional type itself: inside a union, Litestar drops them.
MaybeIdent = Annotated[str | None, QueryParameter(max_length=200, pattern=NO_NUL)]
MaybeText = Annotated[str | None, QueryParameter(max_length=2000, pattern=NO_NUL)]


class MemoryController(Controller):
    path = "/v1/memories"
    guards = [require_bearer]
    tags = ["memories"]

    @post("/", status_code=201)
    async def create(self, data: JSONBody[MemoryIn], memory_service: Service) -> RememberOut:
        return remember_out(await memory_service.remember(remember_input(data)))

    @post("/batch", status_code=201)
    async def create_batch(self, data: JSONBody[BatchIn], memory_service: Service) -> BatchOut:
        results = await memory_service.remember_many([remember_input(i) for i in data.items])
        return BatchOut(results=[remember_out(r) for r in results])

    @get("/")
    async def list_memories(
        self,
        memory_service: Service,
        user_id: QueryIdent,
        project_id: MaybeIdent = None,
        status: FromQuery[MemoryStatus | None] = None,
        type: FromQuery[MemoryType | None] = None,
        subject: MaybeIdent = None,
        q: MaybeText = None,
        limit: Limit = 50,
        cursor: MaybeIdent = None,
        as_of: FromQuery[datetime | None] = None,
        as_of_kind: FromQuery[AsOfKind] = AsOfKind.VALID,
        agent_id: MaybeIdent = None,
    ) -> MemoryPage:
        page = await memory_service.list_memories(
            user_id,
            project_id=project_id,
            status=status,
            mtype=type,
            subject=subject,
            q=q,
            limit=limit,
            cursor=cursor,
            as_of=as_of,
            as_of_kind=as_of_kind,
            agent_id=agent_id,
        )
        return MemoryPage(items=[MemoryOut.of(m) for m in page.items], next_cursor=page.next_cursor)

    @get("/{memory_id:uuid}")
    async def get_memory(self, memory_id: MemoryId, memory_service: Service) -> MemoryOut:
        return MemoryOut.of(await memory_service.get(memory_id))

    @patch("/{memory_id:uuid}")
    async def patch_memory(
        self,
        memory_id: MemoryId,
        data: JSONBody[MemoryPatch],
        memory_service: Service,
    ) -> MemoryOut:
        return MemoryOut.of(await memory_service.patch(memory_id, data.changes()))

    @post("/{memory_id:uuid}/pin", status_code=200)
    async def pin(self, memory_id: MemoryId, memory_service: Service) -> MemoryOut:
        return MemoryOut.of(await memory_service.set_state(memory_id, "pin"))

    @post("/{memory_id:uuid}/unpin", status_code=200)
    async def unpin(self, memory_id: MemoryId, memory_service: Service) -> MemoryOut:
        return MemoryOut.of(await memory_service.set_state(memory_id, "unpin"))

    @post("/{memory_id:uuid}/archive", status_code=200)
    async def archive(self, memory_id: MemoryId, memory_service: Service) -> MemoryOut:
        return MemoryOut.of(await memory_service.set_state(memory_id, "archive"))

    @post("/{memory_id:uuid}/restore", status_code=200)
    async def restore(self, memory_id: MemoryId, memory_service: Service) -> MemoryOut:
        return MemoryOut.of(await memory_service.set_state(memory_id, "restore"))

    @delete("/{memory_id:uuid}", status_code=200)
    async def delete_memory(
        self,
        memory_id: MemoryId,
        memory_service: Service,
        eraser: NamedDependency[Eraser],
        erase: FromQuery[bool] = False,
    ) -> ForgottenOut | EraseReceipt:
        if erase:
            return EraseReceipt(**(await eraser.erase_memory(memory_id)).as_dict())
        memory = await memory_service.get(memory_id)
        forgotten = await memory_service.forget(memory.user_id, memory_id=memory_id, reason="deleted via API")
        return ForgottenOut(forgotten=forgotten)

    @get("/{memory_id:uuid}/history")
    async def history(
        self,
        memory_id: MemoryId,
        memory_service: Service,
        as_of: FromQuery[datetime | None] = None,
        as_of_kind: FromQuery[AsOfKind] = AsOfKind.VALID,
    ) -> HistoryOut:
        return history_out(await memory_service.history(memory_id, as_of=as_of, as_of_kind=as_of_kind))


class RecallController(Controller):
    path = "/v1"
    guards = [require_bearer]
    tags = ["recall"]

    @post("/recall", status_code=200)
    async def recall(self, data: JSONBody[RecallIn], memory_service: Service) -> RecallOut:
        return recall_out(await memory_service.recall(recall_input(data)), data.explain)

    @post("/forget", status_code=200)
    async def forget(self, data: JSONBody[ForgetIn], memory_service: Service) -> ForgottenOut:
        f = data.filter
        forgotten = await memory_service.forget(
            data.user_id,
            project_id=data.project_id,
            memory_id=data.memory_id,
            query=data.query,
            subject=data.subject,
            filter=None
            if f is None
            else ForgetFilter(f.older_than_days, f.salience_below, f.decayed_below, f.type),
            agent_id=data.agent_id,
        )
        return ForgottenOut(forgotten=forgotten)

    @get("/stats")
    async def stats(self, memory_service: Service, user_id: MaybeIdent = None) -> StatsOut:
        return StatsOut(**await memory_service.stats(user_id))

"""The method table: every API operation, once, for both clients.

`Operations` maps a method name to a request description. On `Engram` the method returns the result,
on `AsyncEngram` an awaitable of it; its parameters are the request struct's fields, so a type checker
sees `client.recall(user_id: str, query: str, ...) -> RecallResult`. Adding a route the service gained
is one struct in `requests.py` and one line here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Generic, ParamSpec, TypeVar, overload

from engram_sdk import requests as r
from engram_sdk._base import AsyncClient, SyncClient
from engram_sdk.models import Page
from engram_sdk.requests import Request

P = ParamSpec("P")
T = TypeVar("T")


def _bind(name: str, doc: str | None, call: Callable[..., Any]) -> Callable[..., Any]:
    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


class Operation(Generic[P, T]):
    """A method that builds the request from its arguments and runs it on the client's transport."""

    def __init__(self, request: Callable[P, Request[T]]) -> None:
        self.request = request
        self.name = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @property
    def route(self) -> r.Route:
        route: r.Route = getattr(self.request, "route")  # noqa: B009 (a ClassVar on the struct class)
        return route

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Operation[P, T]: ...
    @overload
    def __get__(self, client: SyncClient, owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, client: Any, owner: type[Any]) -> Any:
        if client is None:
            return self
        build, run = self.request, self._run

        def call(*args: P.args, **kwargs: P.kwargs) -> Any:
            return run(client, build(*args, **kwargs))

        return _bind(self.name, self._doc(), call)

    def _run(self, client: Any, request: Request[T]) -> Any:
        return client._execute(request)

    def _doc(self) -> str | None:
        return self.request.__doc__


class Pages(Operation[P, Page[T]]):
    """An iterator over every item of a paginated list, following `next_cursor` page by page."""

    @overload  # type: ignore[override]
    def __get__(self, client: None, owner: type[Any]) -> Pages[P, T]: ...
    @overload
    def __get__(self, client: SyncClient, owner: type[Any]) -> Callable[P, Iterator[T]]: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type[Any]) -> Callable[P, AsyncIterator[T]]: ...
    def __get__(self, client: Any, owner: type[Any]) -> Any:
        return super().__get__(client, owner)

    def _run(self, client: Any, request: Request[Page[T]]) -> Any:
        return client._iterate(request)

    def _doc(self) -> str | None:
        return f"Every item, page after page: {self.request.__doc__}"


class Events(Operation[P, T]):
    """An iterator over a server-sent event stream, each event decoded, until the connection ends."""

    @overload  # type: ignore[override]
    def __get__(self, client: None, owner: type[Any]) -> Events[P, T]: ...
    @overload
    def __get__(self, client: SyncClient, owner: type[Any]) -> Callable[P, Iterator[T]]: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type[Any]) -> Callable[P, AsyncIterator[T]]: ...
    def __get__(self, client: Any, owner: type[Any]) -> Any:
        return super().__get__(client, owner)

    def _run(self, client: Any, request: Request[T]) -> Any:
        return client._events(request)


class Operations:
    """Every operation of the API (`GET /schema/openapi.json`), shared by `Engram` and `AsyncEngram`."""

    # memories
    remember = Operation(r.Remember)
    remember_batch = Operation(r.RememberBatch)
    list_memories = Operation(r.ListMemories)
    iter_memories = Pages(r.ListMemories)
    get_memory = Operation(r.GetMemory)
    update_memory = Operation(r.UpdateMemory)
    pin_memory = Operation(r.PinMemory)
    unpin_memory = Operation(r.UnpinMemory)
    archive_memory = Operation(r.ArchiveMemory)
    restore_memory = Operation(r.RestoreMemory)
    delete_memory = Operation(r.DeleteMemory)
    erase_memory = Operation(r.EraseMemory)
    history = Operation(r.GetHistory)
    # recall and forget
    recall = Operation(r.Recall)
    forget = Operation(r.Forget)
    stats = Operation(r.GetStats)
    timeline = Operation(r.GetTimeline)
    iter_timeline = Pages(r.GetTimeline)
    # agent
    chat = Operation(r.Chat)
    extract = Operation(r.Extract)
    usage = Operation(r.GetUsage)
    usage_series = Operation(r.GetUsageSeries)
    # directory
    list_users = Operation(r.ListUsers)
    iter_users = Pages(r.ListUsers)
    list_projects = Operation(r.ListProjects)
    iter_projects = Pages(r.ListProjects)
    # portability and privacy
    export = Operation(r.Export)
    export_markdown = Operation(r.ExportMarkdown)
    import_document = Operation(r.ImportDocument)
    reembed = Operation(r.Reembed)
    erase_user = Operation(r.EraseUser)
    erase = Operation(r.Erase)
    # dreaming
    dream = Operation(r.Dream)
    list_proposals = Operation(r.ListProposals)
    iter_proposals = Pages(r.ListProposals)
    approve_proposal = Operation(r.ApproveProposal)
    reject_proposal = Operation(r.RejectProposal)
    apply_proposals = Operation(r.ApplyProposals)
    # change events
    create_webhook = Operation(r.CreateWebhook)
    list_webhooks = Operation(r.ListWebhooks)
    delete_webhook = Operation(r.DeleteWebhook)
    list_dead_letters = Operation(r.ListDeadLetters)
    iter_dead_letters = Pages(r.ListDeadLetters)
    redeliver = Operation(r.Redeliver)
    stream_events = Events(r.StreamEvents)
    # shared spaces
    create_space = Operation(r.CreateSpace)
    list_spaces = Operation(r.ListSpaces)
    grant_space = Operation(r.GrantSpace)
    revoke_space = Operation(r.RevokeSpace)
    propose_promotion = Operation(r.ProposePromotion)
    # service
    health = Operation(r.GetHealth)
    ready = Operation(r.GetReady)


def routes() -> dict[tuple[str, str], list[str]]:
    """(HTTP method, path template) -> the SDK methods that call it; checked against the OpenAPI document."""
    table: dict[tuple[str, str], list[str]] = {}
    for name, attribute in vars(Operations).items():
        if isinstance(attribute, Operation):
            route = attribute.route
            table.setdefault((route.method, route.path), []).append(name)
    return table

"""The request class every route gets: its JSON body is decoded strictly, once, against the handler's
own `data` type.

Litestar decodes a body to plain Python first and then converts it to the handler's type in msgspec's
lax mode (`strict=False`, fixed in its signature model), which turns `"0.9"` into a float and `"true"`
into a bool, and the plain decode recurses without a depth limit. Decoding here, with the target type
and strict rules, refuses both; the struct it returns passes Litestar's conversion unchanged.

Order of errors: Litestar reads the body before it resolves dependencies (the API key is checked in
one), and converts the arguments after. Unreadable or too deeply nested JSON is refused at once (a
400, whoever sends it); a body that is JSON but breaks the schema is held until the conversion fails,
so a bad key is still a 401 before a bad field is a 422.
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.datastructures import State
from litestar.types import Empty

from app.lib.errors import ValidationFailed
from app.lib.jsonbody import decode_strict
from app.lib.settings import Settings

_REFUSED_KEY = "engram.refused_body"


class _Refused:
    """What Litestar gets for a body that broke the schema: no handler's `data` type accepts it."""

    __slots__ = ()


def refused_body(request: Request[Any, Any, Any]) -> ValidationFailed | None:
    """The schema error of this request's body, if its conversion failed because of one."""
    error = request.scope.get("state", {}).get(_REFUSED_KEY)
    return error if isinstance(error, ValidationFailed) else None


async def one_value_per_query_parameter(request: Request[Any, Any, Any]) -> None:
    """Refuse a query string that gives a parameter twice (`?user_id=a&user_id=b`): no operation takes a
    list in its query, so which value counts would be a guess (the framework keeps one silently). Runs
    before the handler and its dependencies read anything, so nothing is written."""
    params = request.query_params
    for name in params:
        if len(params.getall(name)) > 1:
            shown = name if len(name) <= 64 else name[:64] + "..."
            raise ValidationFailed(f"query parameter {shown!r} is given more than once")


class StrictJSONRequest(Request[Any, Any, State]):
    async def json(self) -> Any:
        """The body decoded as the handler's `data` type (any JSON, still depth-checked, without one)."""
        if self._json is not Empty:
            return self._json
        data = self.route_handler.parsed_fn_signature.parameters.get("data")
        target = data.annotation if data is not None else Any
        settings: Settings = self.app.state.services.settings
        try:
            self._json = decode_strict(await self.body(), target, max_depth=settings.max_json_depth)
        except ValidationFailed as exc:
            self.scope.setdefault("state", {})[_REFUSED_KEY] = exc
            self._json = _Refused()
        return self._json

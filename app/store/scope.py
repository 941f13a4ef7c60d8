"""What a scope of memories includes, defined once, as SQL over a tenant table.

Every statement that asks about a scope (recall's candidates, the write path's lookups, lists, dreams,
exports, erases) takes its filter from `scope_sql`, whether it is hand-written SQL (recall, tuned to its
indexes) or an ORM query (`scope_clause`). The named parameters are `:tenant`, `:user_id`,
`:project_id` and `:now` (`scope_params`), plus `:agent_id` and `:space` for an agent's or a space's
scope (only then: a scope without them is the same SQL as before agents and spaces existed).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import TextClause, text

from app.vocabulary import LIVE_STATUSES, Reach, Scope

_LIVE = "({t}.status IN (" + ", ".join(f"'{s}'" for s in LIVE_STATUSES) + "))"


def live_sql(table: str = "memories") -> str:
    """The live rows of `table`: active or pinned memories."""
    return _LIVE.format(t=table)


def scope_sql(scope: Scope, *, table: str = "memories", live: bool = False, unexpired: bool = False) -> str:
    """The scope's rows of `table` (which has tenant_id, user_id, project_id); `live`: active or pinned
    memories only; `unexpired`: not past `expires_at` at `:now`."""
    t = table
    parts = [f"{t}.tenant_id = :tenant", f"{t}.user_id = :user_id"]
    if scope.reach is Reach.WITH_GLOBAL:
        parts.append(f"({t}.project_id IS NULL OR {t}.project_id = :project_id)")
    elif scope.reach is Reach.ONLY or scope.project_id is not None:
        parts.append(
            f"{t}.project_id IS NULL" if scope.project_id is None else f"{t}.project_id = :project_id"
        )
    if scope.space is not None:
        parts.append(f"{t}.space = :space")
    if scope.agent_id is not None:
        parts = [parts[0], _agent_sql(scope, t, parts[1:])]
    if live:
        parts.append(live_sql(t))
    if unexpired:
        parts.append(f"({t}.expires_at IS NULL OR {t}.expires_at > :now)")
    return " AND ".join(parts)


def _agent_sql(scope: Scope, t: str, user_parts: list[str]) -> str:
    """An agent's part of the scope: its own memories (`own`: only those, its slots), else also the
    user's agent-less ones; `shared`: or a memory of a space the agent is granted."""
    mine = f"{t}.agent_id = :agent_id"
    if not scope.own:
        mine = f"({t}.agent_id IS NULL OR {mine})"
    own = " AND ".join([*user_parts, mine])
    if not scope.shared:
        return own
    granted = (
        f"{t}.space IN (SELECT g.space FROM space_grants g"
        " WHERE g.tenant_id = :tenant AND g.agent_id = :agent_id)"
    )
    return f"(({own}) OR ({t}.user_id = '' AND {granted}))"


def owners_sql(scope: Scope, *, table: str) -> str:
    """The user ids whose memories `scope_sql` may include, over a table that carries its memory's
    `user_id` (a memory's passages), so a read can start from them: the user's, and in an agent's shared
    view also the spaces' (user_id '')."""
    if scope.agent_id is not None and scope.shared:
        return f"{table}.user_id IN (:user_id, '')"
    return f"{table}.user_id = :user_id"


def scope_params(scope: Scope, now: datetime | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "tenant": scope.tenant,
        "user_id": scope.user_id,
        "project_id": scope.project_id,
    }
    if scope.agent_id is not None:
        params["agent_id"] = scope.agent_id
    if scope.space is not None:
        params["space"] = scope.space
    if now is not None:
        params["now"] = now
    return params


def scope_clause(
    scope: Scope,
    *,
    table: str = "memories",
    live: bool = False,
    now: datetime | None = None,
) -> TextClause:
    """`scope_sql` with its values bound, for an ORM statement's WHERE (`unexpired` when `now` is given)."""
    sql = scope_sql(scope, table=table, live=live, unexpired=now is not None)
    params = scope_params(scope, now)
    used = {name: value for name, value in params.items() if f":{name}" in sql}
    return text(f"({sql})").bindparams(**used)  # parenthesised: safe inside OR and NOT

"""Transient transaction conflicts are a retryable 409, other database errors a logged 500."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.exc import DBAPIError

from app.api.errors import database_error


class FakeDriverError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"driver error {sqlstate}")
        self.sqlstate = sqlstate


def respond(sqlstate: str) -> tuple[int, dict[str, Any]]:
    response = database_error(None, DBAPIError("UPDATE memories ...", {}, FakeDriverError(sqlstate)))  # type: ignore[arg-type]
    return response.status_code, json.loads(json.dumps(response.content))


def test_deadlock_and_serialization_failures_are_a_retryable_conflict() -> None:
    for state in ("40P01", "40001"):
        status, body = respond(state)
        assert status == 409
        assert body["error"] == "conflict"
        assert "retry" in body["detail"]


def test_other_database_errors_stay_internal_and_reveal_nothing() -> None:
    status, body = respond("XX000")
    assert status == 500
    assert body == {"error": "internal_error", "detail": "an unexpected error occurred; it has been logged"}

"""How the SDK turns a request description into HTTP, and how it reads errors (no server needed)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import UTC, datetime

import httpx
import pytest

from engram_sdk import errors
from engram_sdk._exchange import ClientConfig, build_request
from engram_sdk.requests import (
    EraseMemory,
    EraseUser,
    GetUsage,
    ListMemories,
    Recall,
    Remember,
    UpdateMemory,
)

CONFIG = ClientConfig.build("http://engram.test/", "egm_x", None, {"X-Trace": "t1"})


def test_unset_arguments_are_not_sent_so_the_service_defaults_apply() -> None:
    request = build_request(CONFIG, Remember("alice", "tea"))
    assert (request.method, str(request.url)) == ("POST", "http://engram.test/v1/memories")
    assert request.content == b'{"user_id":"alice","content":"tea"}'
    assert request.headers["authorization"] == "Bearer egm_x"
    assert request.headers["x-trace"] == "t1"
    recall = build_request(CONFIG, Recall("alice", "q", include_sensitive=False))
    assert recall.content == b'{"user_id":"alice","query":"q","include_sensitive":false}'


def test_query_path_and_fixed_parameters() -> None:
    listing = build_request(CONFIG, ListMemories("a b", status="active", limit=5))
    assert str(listing.url) == "http://engram.test/v1/memories?user_id=a+b&status=active&limit=5"
    assert listing.content == b""
    memory_id = uuid.uuid4()
    erase = build_request(CONFIG, EraseMemory(memory_id))
    assert (erase.method, str(erase.url)) == (
        "DELETE",
        f"http://engram.test/v1/memories/{memory_id}?erase=true",
    )
    since = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    usage = build_request(CONFIG, GetUsage(since=since))
    assert usage.url.params["since"] == "2026-01-02T03:04:05Z"
    # A path segment is quoted whole: a '/' in a user id cannot reach another route.
    assert build_request(CONFIG, EraseUser("a/b")).url.raw_path == b"/v1/users/a%2Fb/erase"


def test_a_patch_sends_only_the_fields_given_and_none_clears() -> None:
    request = build_request(CONFIG, UpdateMemory("m1", subject=None, importance=0.2))
    assert str(request.url) == "http://engram.test/v1/memories/m1"
    assert request.content == b'{"subject":null,"importance":0.2}'


def test_without_a_key_no_authorization_header_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_API_KEY", raising=False)
    monkeypatch.setenv("ENGRAM_URL", "http://from-env:9000/")
    config = ClientConfig.build(None, None, None, {})
    assert config.base_url == "http://from-env:9000"
    assert "authorization" not in config.headers
    monkeypatch.setenv("ENGRAM_API_KEY", "egm_env")
    assert ClientConfig.build(None, None, None, {}).headers["authorization"] == "Bearer egm_env"


@pytest.mark.parametrize("cls", errors.ERROR_CLASSES)
def test_each_error_code_has_its_class(cls: type[errors.EngramError]) -> None:
    assert cls.http_status is not None
    response = httpx.Response(cls.http_status, json={"error": cls.error_code, "detail": "why"})
    error = errors.error_from_response(response)
    assert type(error) is cls
    assert (error.status, error.code, error.detail) == (cls.http_status, cls.error_code, "why")


def test_an_unknown_code_keeps_its_code_and_takes_the_class_of_its_status() -> None:
    error = errors.error_from_response(
        httpx.Response(403, json={"error": "quota_exceeded", "detail": "full"})
    )
    assert (type(error), error.code, error.status) == (errors.ForbiddenError, "quota_exceeded", 403)
    proxy = errors.error_from_response(httpx.Response(502, text="<html>Bad Gateway</html>"))
    assert (type(proxy), proxy.status, proxy.detail) == (
        errors.UnavailableError,
        502,
        "<html>Bad Gateway</html>",
    )
    teapot = errors.error_from_response(httpx.Response(418, text=""))
    assert (type(teapot), teapot.detail) == (errors.BadRequestError, "I'm a teapot")


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert errors.parse_retry_after("3", now) == 3.0
    assert errors.parse_retry_after(" 1.5 ", now) == 1.5
    assert errors.parse_retry_after("Thu, 01 Jan 2026 12:00:07 GMT", now) == 7.0
    assert errors.parse_retry_after("Thu, 01 Jan 2026 11:59:00 GMT", now) == 0.0  # already past
    assert errors.parse_retry_after("-4", now) == 0.0
    for unreadable in (None, "", "soon", "nan"):
        assert errors.parse_retry_after(unreadable, now) is None


def test_the_sdk_imports_nothing_of_the_service() -> None:
    # It installs alone (httpx + msgspec): importing it must not need the service's stack.
    probe = (
        "import sys, engram_sdk; heavy = {'app', 'sqlalchemy', 'litestar', 'openai', 'asyncpg', 'numpy'};"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"

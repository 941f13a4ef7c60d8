"""The error classes the running app's answers turn into (sync and async)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from engram_sdk import (
    BadRequestError,
    EngramError,
    NotFoundError,
    PayloadTooLargeError,
    UnauthorizedError,
    ValidationError,
)
from engram_sdk.errors import ERROR_CLASSES
from tests.sdk.conftest import Connect
from tests.support.sdk import run


async def test_no_key_and_a_wrong_key_are_unauthorized(connect: Connect) -> None:
    for key in (None, "egm_00000000_not-a-real-key"):
        with pytest.raises(UnauthorizedError) as caught:
            await run(connect(key).stats())
        assert (caught.value.status, caught.value.code) == (401, "unauthorized")
    assert (await run(connect(None).health())).status == "ok"  # health needs no key


async def test_unknown_ids_are_not_found(sdk: Any) -> None:
    with pytest.raises(NotFoundError) as caught:
        await run(sdk.get_memory(uuid.uuid4()))
    assert "not found" in caught.value.detail
    with pytest.raises(NotFoundError):
        await run(sdk.approve_proposal(uuid.uuid4()))


async def test_invalid_arguments_are_validation_errors_and_write_nothing(sdk: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        await run(sdk.remember("u", "tea", type="beverage"))
    assert caught.value.status == 422
    with pytest.raises(ValidationError):
        await run(sdk.recall("u", "tea", token_budget=-1))
    with pytest.raises(BadRequestError) as bad:
        await run(sdk.import_document(b"{not json"))
    assert (bad.value.status, bad.value.code) == (400, "bad_request")
    assert (await run(sdk.stats())).total == 0


async def test_a_body_over_the_limit_is_payload_too_large(sdk: Any) -> None:
    with pytest.raises(PayloadTooLargeError) as caught:
        await run(sdk.remember("u", "x" * (1024 * 1024 + 1)))
    assert caught.value.status == 413


def test_every_code_the_service_can_answer_has_its_own_class() -> None:
    from app.api.errors import _CODES
    from app.lib import errors as service_errors

    service_codes = set(_CODES.values()) | {
        cls.code for cls in vars(service_errors).values()
        if isinstance(cls, type) and issubclass(cls, service_errors.EngramError)
    }  # fmt: skip
    sdk_classes = {cls.error_code: cls for cls in ERROR_CLASSES}
    assert service_codes <= sdk_classes.keys()
    assert all(issubclass(cls, EngramError) for cls in sdk_classes.values())
    assert len(set(sdk_classes.values())) == len(sdk_classes)  # one class per code

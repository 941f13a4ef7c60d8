"""Every operation of the served OpenAPI document has an SDK method, and every SDK method a route."""

from __future__ import annotations

from typing import Any, get_args

import httpx
import msgspec

from app.vocabulary import AsOfKind
from engram_sdk import AsyncEngram, Engram, routes
from engram_sdk.operations import Operation, Operations
from engram_sdk.requests import result_type

HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


def served_operations(live_url: str) -> set[tuple[str, str]]:
    document = httpx.get(f"{live_url}/schema/openapi.json").raise_for_status().json()
    return {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }


def test_every_openapi_operation_has_an_sdk_method(live_url: str) -> None:
    served = served_operations(live_url)
    table = routes()
    missing = sorted(served - table.keys())
    assert not missing, f"operations without an SDK method (add them to engram_sdk.operations): {missing}"
    stale = sorted(table.keys() - served)
    assert not stale, f"SDK methods for routes the service does not serve: {stale}"
    assert len(served) >= 30


async def test_both_clients_expose_every_method() -> None:
    names = {name for methods in routes().values() for name in methods}
    with Engram(api_key="egm_x") as sync_client:
        async with AsyncEngram(api_key="egm_x") as async_client:
            for client in (sync_client, async_client):
                for name in names:
                    method = getattr(client, name)
                    assert (method.__name__, bool(method.__doc__)) == (name, True)


# The SDK's structs mirror the API's JSON by hand (the SDK must install without the service); these
# tests hold the mirror to the served document, field by field, so the two cannot drift apart.


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _children(document: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas inside a property's schema (through null unions, arrays and maps)."""
    schema = _resolve(document, schema)
    if "properties" in schema:
        return [schema]
    found: list[dict[str, Any]] = []
    for option in schema.get("oneOf", []) + schema.get("anyOf", []):
        found += _children(document, option)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            found += _children(document, schema[key])
    return found


def _structs(info: Any) -> list[msgspec.inspect.StructType]:
    """The struct types inside a field's type (through unions, lists and dicts)."""
    if isinstance(info, msgspec.inspect.StructType):
        return [info]
    if isinstance(info, msgspec.inspect.UnionType):
        return [s for t in info.types for s in _structs(t)]
    if isinstance(info, msgspec.inspect.ListType):
        return _structs(info.item_type)
    if isinstance(info, msgspec.inspect.DictType):
        return _structs(info.value_type)
    return []


def _compare(document: dict[str, Any], info: Any, schema: dict[str, Any], where: str) -> list[str]:
    problems: list[str] = []
    candidates = _children(document, schema)
    if not candidates:  # an untyped answer (`dict[str, Any]`, a raw Response): the live tests decode it
        return problems
    for struct in _structs(info):
        sdk = {f.encode_name for f in struct.fields}
        # A union answer (`ForgottenOut | EraseReceipt`): the schema the struct is closest to.
        object_schema = max(
            candidates, key=lambda c: len(sdk & set(c["properties"])) - len(sdk ^ set(c["properties"]))
        )
        api = set(object_schema["properties"])
        if sdk != api:
            name = struct.cls.__name__
            problems.append(f"{where} {name}: SDK lacks {sorted(api - sdk)}, API lacks {sorted(sdk - api)}")
        for field in struct.fields:
            if field.encode_name in object_schema["properties"]:
                sub = object_schema["properties"][field.encode_name]
                problems += _compare(document, field.type, sub, f"{where}.{field.encode_name}")
    return problems


def test_every_result_struct_has_exactly_the_fields_the_api_returns(live_url: str) -> None:
    document = httpx.get(f"{live_url}/schema/openapi.json").raise_for_status().json()
    problems: list[str] = []
    for operation in operations():
        route = operation.route
        responses = document["paths"][route.path][route.method.lower()]["responses"]
        success = responses.get("200") or responses["201"]
        schema = success.get("content", {}).get("application/json", {}).get("schema", {})
        into = msgspec.inspect.type_info(result_type(operation.request))  # type: ignore[arg-type]
        problems += _compare(document, into, schema, f"{route.method} {route.path}")
    assert not problems, "\n".join(problems)


def test_every_request_struct_has_exactly_the_arguments_the_api_takes(live_url: str) -> None:
    document = httpx.get(f"{live_url}/schema/openapi.json").raise_for_status().json()
    problems: list[str] = []
    fixed_on_route: dict[tuple[str, str], set[str]] = {}
    for operation in operations():  # `?erase=true` is EraseMemory's; DeleteMemory leaves it out
        key = (operation.route.method, operation.route.path)
        fixed_on_route.setdefault(key, set()).update(name for name, _ in operation.route.query)
    for operation in operations():
        route, request = operation.route, operation.request
        if route.raw_body is not None:
            continue  # the body is a whole document (the export format), checked by the import tests
        spec = document["paths"][route.path][route.method.lower()]
        fixed = fixed_on_route[(route.method, route.path)]
        parameters = {p["name"] for p in spec.get("parameters", []) if p["in"] in ("query", "path")}
        body = spec.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body is not None:
            [object_schema] = _children(document, body)
            parameters |= set(object_schema["properties"])
        fields = set(request.__struct_fields__)  # type: ignore[attr-defined]
        if fields != parameters - fixed:
            problems.append(
                f"{route.method} {route.path}: SDK {sorted(fields)}, API {sorted(parameters - fixed)}"
            )
    assert not problems, "\n".join(problems)


def operations() -> list[Operation[Any, Any]]:
    return [a for a in vars(Operations).values() if isinstance(a, Operation)]


def _field_tree(struct: type[Any]) -> dict[str, Any]:
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    return {
        f.encode_name: [_field_tree(s.cls) for s in _structs(f.type)] for f in info.fields
    }  # fmt: skip


def test_the_export_document_mirrors_the_service_format() -> None:
    # Export answers a raw document (no schema in OpenAPI): compare with the format's own structs.
    from app.portability.document import ExportDocument as ServiceDocument
    from engram_sdk.models import ExportDocument

    assert _field_tree(ExportDocument) == _field_tree(ServiceDocument)


def _enum_values(struct: type[Any], field: str) -> set[str]:
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    [found] = [f.type for f in info.fields if f.name == field]
    options = found.types if isinstance(found, msgspec.inspect.UnionType) else (found,)
    [enum] = [t for t in options if isinstance(t, msgspec.inspect.EnumType | msgspec.inspect.LiteralType)]
    return {m.value for m in enum.cls} if isinstance(enum, msgspec.inspect.EnumType) else set(enum.values)


def test_the_sdk_vocabulary_is_the_services() -> None:
    # The request side's Literal types (a type checker's help) against the enums the service refuses
    # unknown values with; the export format carries each of them.
    from app.api.agent import MessageIn
    from app.portability.document import ExportedMemory, ExportedProposal
    from engram_sdk import models

    assert set(get_args(models.MemoryType)) == _enum_values(ExportedMemory, "type")
    assert set(get_args(models.MemoryStatus)) == _enum_values(ExportedMemory, "status")
    assert set(get_args(models.Privacy)) == _enum_values(ExportedMemory, "privacy")
    assert set(get_args(models.ProposalStatus)) == _enum_values(ExportedProposal, "status")
    assert set(get_args(models.Role)) == _enum_values(MessageIn, "role")
    assert set(get_args(models.AsOfKind)) == {k.value for k in AsOfKind}

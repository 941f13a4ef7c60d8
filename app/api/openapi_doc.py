"""What Litestar's generated OpenAPI document lacks, added once before it is first served.

- The bearer security scheme, required by every /v1 operation (Swagger's "Authorize" sends the key).
- The error shape the API really sends (`app/api/errors.py`: `{"error": <code>, "detail": <sentence>}`),
  instead of Litestar's `status_code/detail/extra`.
- Every 4xx an operation can return: 401 and 429 (key, limits) on every /v1 operation; 400 and 422 where
  it reads parameters or a body; 413 where it reads a body; 404 where it names a resource; 409 on
  writes (a concurrent change, the memories quota); 403 where an agent's grant on a space is checked;
  503 where an embedder or model is called.
"""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA = "Error"
SECURITY_SCHEME = "bearer"
_DONE = "x-engram-errors"

_DESCRIPTIONS = {
    400: "Unreadable input: malformed or too deeply nested JSON, a bad query string",
    401: "Missing, malformed, invalid or revoked API key",
    403: "The agent is not granted on the space, or may not propose into it",
    404: "No such resource for this tenant",
    409: "A concurrent change (retry), or the tenant's memories quota (`memory_quota_exceeded`)",
    413: "The body is larger than the service accepts",
    422: "The input breaks the schema (the detail names the field, never its value)",
    429: (
        "A tenant limit: requests per minute (`rate_limited`), requests in flight (`concurrency_limited`), "
        "model tokens per day (`token_quota_exceeded`); `Retry-After` says when to retry"
    ),
    503: "The embedding or model provider failed; retry later",
}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying",
        "schema": {"type": "integer", "minimum": 1},
    }
}
_WRITES = {"post", "patch", "put", "delete"}
_METHODS = {"get", "post", "patch", "put", "delete"}
# Operations whose body names other resources (proposal ids) or that may write: 404 without a path id.
_NAMES_RESOURCES = {("post", "/v1/dream/apply"), ("post", "/v1/erase"), ("post", "/v1/forget")}
# Operations that check an agent's grant on a shared space.
_CHECKS_GRANTS = {("post", "/v1/spaces/{space}/promotions")}
# Operations that embed text or call a model.
_PROVIDER_PREFIXES = ("/v1/memories", "/v1/recall", "/v1/forget", "/v1/chat", "/v1/import", "/v1/reembed")
_PROVIDER_PATHS = {"/v1/dream"}


def error_statuses(method: str, path: str, operation: dict[str, Any]) -> list[int]:
    """The 4xx (and 503) statuses `method path` can answer with."""
    if not path.startswith("/v1/"):
        return []
    statuses = {401, 429}
    has_body = "requestBody" in operation or path == "/v1/import"  # import reads its raw body itself
    if has_body or operation.get("parameters"):
        statuses |= {400, 422}
    if has_body:
        statuses.add(413)
    if "{" in path or (method, path) in _NAMES_RESOURCES:
        statuses.add(404)
    if method in _WRITES:
        statuses.add(409)
    if (method, path) in _CHECKS_GRANTS:
        statuses.add(403)
    if path.startswith(_PROVIDER_PREFIXES) or path in _PROVIDER_PATHS:
        statuses.add(503)
    return sorted(statuses)


def finish_document(document: dict[str, Any]) -> dict[str, Any]:
    """Add the security scheme, the error schema and the error responses (in place, once)."""
    if document.get(_DONE):
        return document
    components = document.setdefault("components", {})
    components.setdefault("schemas", {})[ERROR_SCHEMA] = {
        "type": "object",
        "properties": {
            "error": {"type": "string", "description": "machine code, e.g. `validation_error`"},
            "detail": {"type": "string", "description": "a sentence for a person"},
        },
        "required": ["error", "detail"],
        "additionalProperties": False,
    }
    components["securitySchemes"] = {
        SECURITY_SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": "An Engram API key (`egm_...`) from `engram tenant create` or `engram key create`",
        }
    }
    error = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"}}}
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if method not in _METHODS:
                continue
            responses = operation.setdefault("responses", {})
            # Litestar's default 400 documents its own error shape, which this API never sends.
            responses.pop("400", None)
            statuses = error_statuses(method, path, operation)
            if path.startswith("/v1/"):
                operation["security"] = [{SECURITY_SCHEME: []}]
            for status in statuses:
                response: dict[str, Any] = {"description": _DESCRIPTIONS[status], "content": error}
                if status == 429:
                    response["headers"] = _RETRY_AFTER
                responses[str(status)] = response
    _close_request_schemas(document)
    _describe_raw_routes(document)
    document[_DONE] = True
    return document


def _close_request_schemas(document: dict[str, Any]) -> None:
    """Request bodies are strict structs (unknown fields refused): say so (`additionalProperties: false`)
    on every component a request body reaches, so a client (or a fuzzer) knows before it sends one."""
    schemas = document.get("components", {}).get("schemas", {})
    seen: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[-1]
                if name not in seen and name in schemas:
                    seen.add(name)
                    target = schemas[name]
                    if "properties" in target:
                        target.setdefault("additionalProperties", False)
                    visit(target)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    for item in document.get("paths", {}).values():
        for method, operation in item.items():
            if method in _METHODS and "requestBody" in operation:
                visit(operation["requestBody"])


def _describe_raw_routes(document: dict[str, Any]) -> None:
    """The two routes that read or write their body themselves: export's formats, import's body."""
    paths = document.get("paths", {})
    export = paths.get("/v1/export", {}).get("get")
    if export is not None:
        export["responses"]["200"]["content"] = {
            "application/json": {"schema": {"type": "object"}},
            "text/markdown": {"schema": {"type": "string"}},
        }
    imported = paths.get("/v1/import", {}).get("post")
    if imported is not None:
        imported["requestBody"] = {
            "description": "A JSON export document (GET /v1/export?format=json)",
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }

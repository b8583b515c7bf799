"""The OpenAPI document says what the API really answers.

FastAPI documents only 200 and its own 422 shape (`detail` a list of validation errors), while the
routes also answer `{"detail": "one line"}` (404 unknown host, 422 a bad value the route found itself,
401/403/409/429 on the restart route, 413/429 from app.api.limits). Every operation gets a `4XX`
response with that shape, and the 422 schema takes both forms.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "properties": {"detail": {"title": "Detail", "anyOf": [{"type": "string"}, {"type": "object"}]}},
    "required": ["detail"],
}
ERROR_RESPONSE: dict[str, Any] = {
    "description": "Refused: the one-line reason in `detail`",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


def document_errors(app: FastAPI) -> None:
    """Replace app.openapi with a version that documents the error answers."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
            schemas = schema.setdefault("components", {}).setdefault("schemas", {})
            schemas["Error"] = ERROR_SCHEMA
            validation = schemas.get("HTTPValidationError")
            if validation is not None:
                detail = validation["properties"]["detail"]
                validation["properties"]["detail"] = {"title": "Detail", "anyOf": [
                    {k: v for k, v in detail.items() if k != "title"}, {"type": "string"}, {"type": "object"}]}
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    operation.setdefault("responses", {}).setdefault("4XX", ERROR_RESPONSE)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

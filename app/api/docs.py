"""GET /docs: the API's operations as one plain page, built from the OpenAPI document on this server.

FastAPI's own /docs loads Swagger UI from a CDN, which the dashboard's offline rule and its
Content-Security-Policy forbid. This page needs no script at all: every operation, its parameters and
its answers, rendered here and escaped (summaries come from code, but nothing is trusted as markup).
The machine-readable schema stays at /openapi.json.
"""

from __future__ import annotations

from html import escape
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)
METHODS = ("get", "post", "put", "patch", "delete")
STYLE = ("body{font:14px system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
         "h2{font-size:1rem;margin:1.5rem 0 .25rem}code{background:#eee;padding:0 .2rem}"
         "td,th{text-align:left;padding:.1rem .6rem .1rem 0;vertical-align:top}")


def _parameters(operation: dict[str, Any]) -> str:
    rows = [
        f"<tr><td><code>{escape(str(p.get('name', '')))}</code></td><td>{escape(str(p.get('in', '')))}</td>"
        f"<td>{'required' if p.get('required') else ''}</td>"
        f"<td>{escape(str(p.get('description', '')))}</td></tr>"
        for p in operation.get("parameters", [])
    ]
    if "requestBody" in operation:
        rows.append("<tr><td><code>body</code></td><td>JSON</td><td></td><td>see /openapi.json</td></tr>")
    return f"<table>{''.join(rows)}</table>" if rows else ""


def _operation(path: str, method: str, operation: dict[str, Any]) -> str:
    answers = ", ".join(escape(code) for code in operation.get("responses", {}))
    summary = escape(str(operation.get("summary") or ""))
    description = escape(str(operation.get("description") or "")).split("\n\n", 1)[0]
    return (f"<h2><code>{method.upper()} {escape(path)}</code> {summary}</h2>"
            f"<p>{description}</p>{_parameters(operation)}<p>answers: {answers}</p>")


def render(schema: dict[str, Any]) -> str:
    info = schema.get("info", {})
    parts = [f"<h1>{escape(str(info.get('title', 'kvwatch')))} {escape(str(info.get('version', '')))} API</h1>",
             '<p>The schema as JSON: <a href="/openapi.json">/openapi.json</a>.</p>']
    for path, item in sorted(schema.get("paths", {}).items()):
        parts += [_operation(path, method, item[method]) for method in METHODS if method in item]
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>kvwatch API</title>'
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>")


@router.get("/docs")
def api_docs(request: Request) -> HTMLResponse:
    return HTMLResponse(render(request.app.openapi()))

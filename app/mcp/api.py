"""The tools' one way to the kvwatch HTTP API: async JSON requests whose failures are sentences."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2

from kvwatch.app.terminal.client import URL_ENV

TIMEOUT_S = 30.0


class ApiFailure(Exception):
    """kvwatch refused or could not be asked; `str()` is the sentence an agent reads."""

    def __init__(self, sentence: str, status: int | None = None) -> None:
        super().__init__(sentence)
        self.status = status


@dataclass(frozen=True, slots=True)
class Api:
    """One kvwatch: its base URL, headers sent with each request (a bearer token), and the transport
    (None: the network; an ASGI transport: an app in this process)."""

    base_url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    transport: httpx2.AsyncBaseTransport | None = None

    def with_headers(self, extra: Mapping[str, str]) -> Api:
        return Api(self.base_url, {**self.headers, **extra}, self.transport)

    async def get(self, path: str, params: Mapping[str, object] | None = None) -> Any:
        return await self._send("GET", path, params=params)

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return await self._send("POST", path, json=dict(body))

    async def text(self, path: str, params: Mapping[str, object] | None = None) -> str:
        answer = await self._request("GET", path, params=params)
        return answer.text

    async def _send(self, method: str, path: str, **kw: Any) -> Any:
        answer = await self._request(method, path, **kw)
        try:
            return answer.json()
        except ValueError:
            raise ApiFailure(f"{self.base_url}{path} did not answer JSON: is this a kvwatch?") from None

    async def _request(self, method: str, path: str, **kw: Any) -> httpx2.Response:
        params = {k: v for k, v in (kw.pop("params", None) or {}).items() if v is not None}
        try:
            async with httpx2.AsyncClient(base_url=self.base_url, headers=dict(self.headers),
                                          transport=self.transport, timeout=TIMEOUT_S) as client:
                answer = await client.request(method, path, params=params or None, **kw)
        except httpx2.HTTPError as exc:
            raise ApiFailure(f"cannot reach kvwatch at {self.base_url}: {exc or type(exc).__name__} "
                             f"(is `kvwatch serve` running? set --url or {URL_ENV})") from None
        if answer.status_code >= 400:
            raise ApiFailure(f"kvwatch refused {method} {path} (HTTP {answer.status_code}): {_detail(answer)}",
                             answer.status_code)
        return answer


def _detail(answer: httpx2.Response) -> str:
    """FastAPI's `detail` as one sentence: a string, or {"message", "errors": [{"flag", "message"}]}."""
    try:
        detail = answer.json().get("detail")
    except (ValueError, AttributeError):
        return answer.reason_phrase or "no reason given"
    if isinstance(detail, dict):
        errors = detail.get("errors") or []
        named = "; ".join(f"--{e.get('flag')}: {e.get('message')}" if isinstance(e, dict) and e.get("flag")
                          else str(e.get("message", e) if isinstance(e, dict) else e) for e in errors)
        return f"{detail.get('message', 'refused')}: {named}" if named else str(detail.get("message", detail))
    if isinstance(detail, list):  # pydantic's 422: [{"loc", "msg"}]
        return "; ".join(f"{'.'.join(str(p) for p in d.get('loc', ()))}: {d.get('msg')}" for d in detail
                         if isinstance(d, dict)) or str(detail)
    return str(detail) if detail else (answer.reason_phrase or "no reason given")

"""The answers `kvwatch status` shows: each host's /status plus its diagnosis verdict when there is one."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from kvwatch.app.errors import KvwatchError
from kvwatch.app.terminal.client import ApiClient, ApiError, Unreachable


def host_names(client: ApiClient) -> list[str]:
    return [str(h["name"]) for h in client.get("/api/hosts")]


def host_status(client: ApiClient, host: str) -> dict[str, Any]:
    """GET /api/hosts/{host}/status; an unknown host is a usage error (exit 2)."""
    try:
        status: dict[str, Any] = client.get(f"/api/hosts/{quote(host, safe='')}/status")
    except ApiError as exc:
        if exc.status == 404 and exc.detail.startswith("unknown host"):
            known = ", ".join(host_names(client))
            raise KvwatchError(f"--host: no host named {host!r} at {client.base_url} (hosts: {known})") from None
        if exc.status == 404:
            raise Unreachable(
                f"{client.base_url} has no /api/hosts/{{name}}/status: it is older than `kvwatch status`"
            ) from None
        raise
    return status


def diagnosis(client: ApiClient, host: str) -> dict[str, Any] | None:
    """The diagnosis, or None while kvwatch has no diagnosis route (404) or it fails: a status without
    a verdict is still worth showing."""
    try:
        answer = client.get(f"/api/hosts/{quote(host, safe='')}/diagnosis")
    except ApiError:
        return None
    return answer if isinstance(answer, dict) else None


def with_verdict(status: dict[str, Any], found: dict[str, Any] | None) -> dict[str, Any]:
    if found is None:
        return {**status, "verdict": None}
    return {**status, "verdict": found.get("verdict"), "diagnosis": found}


def gather(client: ApiClient, host: str | None) -> list[dict[str, Any]]:
    """One status object per host (just `host` when it is given), each with `verdict`."""
    names = [host] if host is not None else host_names(client)
    return [with_verdict(host_status(client, name), diagnosis(client, name)) for name in names]

"""Which kvwatch to read (--url, KVWATCH_URL, the config's [server]) and a JSON GET over urllib."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvwatch.app.config import default_config_path, load_config
from kvwatch.app.errors import KvwatchError

URL_ENV = "KVWATCH_URL"
DEFAULT_URL = "http://127.0.0.1:8765"  # `kvwatch demo` and `kvwatch serve` without a config
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})


class Unreachable(KvwatchError):
    """No answer from kvwatch (refused, timed out, not HTTP): exit 1, not a usage error."""

    exit_code = 1


class ApiError(KvwatchError):
    """kvwatch answered with an HTTP error status."""

    exit_code = 1

    def __init__(self, url: str, status: int, detail: str) -> None:
        super().__init__(f"{url}: HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


def server_url(host: str, port: int) -> str:
    """The URL to reach a server bound to `host`: a wildcard bind is reached on loopback."""
    if host in WILDCARD_BINDS:
        host = "127.0.0.1"
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    return f"http://{host}:{port}"


def resolve_url(flag: str | None, environ: Mapping[str, str], config: Path | None = None) -> str:
    """--url, else $KVWATCH_URL, else the [server] of --config or the discovered kvwatch.toml, else
    DEFAULT_URL."""
    chosen = flag or environ.get(URL_ENV)
    if chosen:
        return chosen.rstrip("/")
    found = config or default_config_path()
    if found is None:
        return DEFAULT_URL
    server = load_config(found).server
    return server_url(server.host, server.port)


class ApiClient:
    """Read-only JSON GETs against one kvwatch; never sends a token."""

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def url(self, path: str, params: Mapping[str, object] | None = None) -> str:
        query = urllib.parse.urlencode({k: v for k, v in (params or {}).items() if v is not None})
        return f"{self.base_url}{path}" + (f"?{query}" if query else "")

    def get(self, path: str, params: Mapping[str, object] | None = None) -> Any:
        url = self.url(path, params)
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                body = answer.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(url, exc.code, _detail(exc)) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise Unreachable(f"cannot reach kvwatch at {self.base_url}: {reason} (set --url or {URL_ENV})") from None
        try:
            return json.loads(body)
        except ValueError:
            raise Unreachable(f"{url}: the answer is not JSON (is this a kvwatch?)") from None


def _detail(error: urllib.error.HTTPError) -> str:
    """FastAPI's {"detail": ...}, else the status text."""
    try:
        detail = json.loads(error.read()).get("detail")
    except (ValueError, AttributeError, OSError):
        detail = None
    return str(detail) if detail else str(error.reason)

"""SGLang's Prometheus /metrics (server started with --enable-metrics), fetched through an SSH
direct-tcpip tunnel: the port stays bound to the GPU host's loopback, nothing is exposed."""

from __future__ import annotations

import http.client
import socket
from typing import cast

from kvwatch.collectors.base import CollectorError, StreamClosed, Transport

MAX_BODY = 32 << 20


def scrape(transport: Transport, port: int, host: str = "127.0.0.1", path: str = "/metrics",
           timeout: float = 5.0) -> str:
    """The exposition text; CollectorError when the endpoint is down or answers non-200."""
    conn = transport.open_tunnel(host, port)
    try:
        conn.settimeout(timeout)
        conn.sendall(f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAccept: text/plain\r\n\r\n".encode())
        # HTTPResponse only calls makefile("rb"), which a paramiko channel has as well
        response = http.client.HTTPResponse(cast(socket.socket, conn))
        response.begin()
        body = response.read(MAX_BODY)
    except (OSError, http.client.HTTPException, EOFError) as exc:
        raise StreamClosed(f"metrics {host}:{port}{path}: {exc or type(exc).__name__}") from exc
    finally:
        conn.close()
    if response.status != 200:
        raise CollectorError(f"metrics {host}:{port}{path}: HTTP {response.status}")
    return body.decode("utf-8", "replace")

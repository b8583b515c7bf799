"""A stand-in kvwatch on a loopback port that serves literal JSON answers by path (stdlib http.server)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# path (without the query) -> (status, body); a body that is a str is sent as it is, not as JSON.
Routes = dict[str, tuple[int, Any]]


@contextmanager
def fake_kvwatch(routes: Routes) -> Iterator[tuple[str, list[str]]]:
    """Yields (base URL, the paths asked for, with their queries, in order)."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            status, body = routes.get(self.path.split("?")[0], (404, {"detail": "Not Found"}))
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()

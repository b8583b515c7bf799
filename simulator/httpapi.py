"""SGLang's HTTP surface, on the standard library's threading HTTP server.

Each request is logged as uvicorn's access line. `/generate` and `/v1/chat/completions` block until
the simulated engine finishes the request, as the real ones do without streaming.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from kvwatch.simulator import logfmt
from kvwatch.simulator.metrics import exposition

if TYPE_CHECKING:
    from kvwatch.simulator.server import SimServer

CHARS_PER_TOKEN = 4  # the simulator has no tokenizer: a prompt of N characters is N/4 tokens


class ApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, sim: SimServer) -> None:
        self.sim = sim
        super().__init__((sim.spec.host, sim.spec.port), Handler)


class Handler(BaseHTTPRequestHandler):
    server: ApiServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Replaced by the uvicorn-style access line written in `_send`."""

    @property
    def sim(self) -> SimServer:
        return self.server.sim

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        client = f"{self.client_address[0]}:{self.client_address[1]}"
        self.sim.access(client, self.command, self.path, status)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode())

    def _not_found(self) -> None:
        self._json(404, {"detail": "Not Found"})

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        data = json.loads(raw or b"{}")
        return data if isinstance(data, dict) else {}

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        version = self.sim.spec.version
        if path in ("/health", "/health_generate"):
            healthy = self.sim.healthy() or not logfmt.at_least(version, "0.5.0")
            self._send(200 if healthy else 503, b"")
        elif path == "/get_server_info" or (path == "/server_info" and logfmt.at_least(version, "0.5.8")):
            self._json(200, self.sim.server_info())
        elif path in ("/get_model_info", "/model_info"):
            self._json(200, self.sim.model_info())
        elif path == "/v1/models":
            self._json(200, {"object": "list", "data": [self.sim.model_card()]})
        elif path == "/get_load" or (path == "/v1/loads" and logfmt.at_least(version, "0.5.8")):
            self._json(200, self.sim.loads())
        elif path == "/metrics" and self.sim.spec.enable_metrics:
            self._send(200, exposition(self.sim.engines, version, self.sim.model_name),
                       "text/plain; version=0.0.4; charset=utf-8")
        else:
            self._not_found()

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if path not in ("/generate", "/v1/chat/completions"):
            self._not_found()
            return
        try:
            body = self._body()
        except (ValueError, UnicodeDecodeError):
            self._json(400, {"error": {"message": "invalid JSON body"}})
            return
        if not self.sim.healthy():
            self._json(503, {"error": {"message": "The server is not ready or is shutting down."}})
            return
        hint = self.headers.get("X-Sim-Output-Tokens")
        if path == "/generate":
            self._generate(body, hint)
        else:
            self._chat(body, hint)

    def _generate(self, body: dict[str, Any], hint: str | None) -> None:
        params = body.get("sampling_params") or {}
        ids = body.get("input_ids")
        prompt = len(ids) if isinstance(ids, list) else len(str(body.get("text") or "")) // CHARS_PER_TOKEN
        req = self.sim.run_request(max(prompt, 1), int(params.get("max_new_tokens") or 128), hint)
        if req is None:
            self._json(503, {"error": {"message": "The server is shutting down."}})
            return
        finish = "length" if req.generated >= req.max_new_tokens else "stop"
        self._json(200, {"text": self.sim.text_for(req), "meta_info": {
            "id": req.rid, "finish_reason": {"type": finish}, "prompt_tokens": req.original_prompt,
            "completion_tokens": req.total_generated, "cached_tokens": req.cached_tokens,
            "e2e_latency": round((req.finished_t or 0.0) - req.arrival_t, 3)}})

    def _chat(self, body: dict[str, Any], hint: str | None) -> None:
        messages = body.get("messages") or []
        chars = sum(len(str(m.get("content") or "")) for m in messages if isinstance(m, dict))
        max_new = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16384)
        req = self.sim.run_request(max(chars // CHARS_PER_TOKEN, 1), max_new, hint)
        if req is None:
            self._json(503, {"error": {"message": "The server is shutting down."}})
            return
        finish = "length" if req.total_generated >= max_new else "stop"
        self._json(200, {
            "id": req.rid, "object": "chat.completion", "created": int(time.time()),
            "model": self.sim.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.sim.text_for(req)},
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": req.original_prompt, "completion_tokens": req.total_generated,
                      "total_tokens": req.original_prompt + req.total_generated},
        })

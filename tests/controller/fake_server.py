"""A stand-in SGLang server for the restart tests: SGLang's command line in, SGLang's log lines out.

Behaviour is chosen by real SGLang flags, so requests go through the real schema:
  --mem-fraction-static >= 0.93       CUDA out of memory traceback, exit 1 (as in the tuning campaign)
  --served-model-name=never-ready     keeps running, never prints the ready line
  --served-model-name=exit-early      exits 3 at once
  --served-model-name=ignore-term     ignores SIGTERM (and so does its worker): needs SIGKILL
  --served-model-name=slow            takes 3 s to load before it is ready
It starts one worker process in its process group, like SGLang's scheduler, to check group kills.
If FAKE_ARGV_LOG is set, it appends its argv as one JSON line there first.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import time


def option(argv: list[str], name: str, default: str) -> str:
    for index, token in enumerate(argv):
        if token == f"--{name}" and index + 1 < len(argv):
            return argv[index + 1]
        if token.startswith(f"--{name}="):
            return token.split("=", 1)[1]
    return default


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def main(argv: list[str]) -> int:
    if os.environ.get("FAKE_ARGV_LOG"):
        with open(os.environ["FAKE_ARGV_LOG"], "a", encoding="utf-8") as handle:
            handle.write(json.dumps(argv) + "\n")
    name = option(argv, "served-model-name", "")
    if name == "exit-early":
        return 3
    if name == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    worker = subprocess.Popen([sys.executable, "-c", "import signal,time\n"
                               + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if name == "ignore-term" else "")
                               + "time.sleep(3600)"])
    print(f"[2026-12-02 10:00:00] server_args=ServerArgs(argv={argv!r})", flush=True)
    time.sleep(3.0 if name == "slow" else 0.3)
    fraction = float(option(argv, "mem-fraction-static", "0.85"))
    if fraction >= 0.93:
        print("Traceback (most recent call last):\n  File \"model_runner.py\", line 1\n"
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.47 GiB", flush=True)
        worker.kill()
        return 1
    tokens = int(116_000 * fraction / 0.85)
    print(f"[2026-12-02 10:00:01 TP0] max_total_num_tokens={tokens}, chunked_prefill_size=8192", flush=True)
    server = http.server.HTTPServer((option(argv, "host", "127.0.0.1"), int(option(argv, "port", "30000"))), Health)
    if name != "never-ready":
        print("[2026-12-02 10:00:02] The server is fired up and ready to roll!", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

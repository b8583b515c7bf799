"""A scripted serving run on this machine, in real time: SGLang server log, client tqdm log and
output files, written by a thread so the real pipeline (local transport, parsers, store, SSE) carries
it to the page. It starts with a few minutes of history, token usage above 0.95 throughout (so the
token-usage alert fires on log time), and `restart()` writes a new server start."""

from __future__ import annotations

import datetime as dt
import json
import math
import threading
import time
from pathlib import Path

from kvwatch.app.config import Config, HostConfig, ServerConfig

READY = "[{ts}] The server is fired up and ready to roll!\n"
DECODE = (
    "[{ts} DP{dp} TP{dp}] Decode batch, #running-req: {running}, #token: {token}, token usage: {usage:.3f}, "
    "cuda graph: True, gen throughput (token/s): {tps:.2f}, #queue-req: {queue}\n"
)
TQDM = "synth:  {pct}%|#####     | {done}/{total} [01:02<01:10, 25.6it/s]\n"
TARGET = 4000


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


class ScriptedRun:
    def __init__(self, root: Path, history_s: int = 300, tick_s: float = 0.25) -> None:
        self.root = root
        self.server_log = root / "logs" / "server.log"
        self.client_log = root / "logs" / "client.log"
        self.outputs = root / "prepared" / "synth" / "raw_responses.jsonl"
        for path in (self.server_log, self.client_log, self.outputs):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        self.tick_s = tick_s
        self.done = 0
        self.step = 0
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._lock = threading.Lock()
        start = time.time() - history_s
        self._write(self.server_log, READY.format(ts=stamp(start)))
        for second in range(history_s):
            self._tick(start + second)
        self._thread = threading.Thread(target=self._run, name="scripted-run", daemon=True)

    def config(self) -> Config:
        host = HostConfig(name="gpu1", ssh="local", server_log=str(self.server_log),
                          client_log=str(self.client_log), outputs=(str(self.root / "prepared/*/raw_responses.jsonl"),),
                          target_completions=TARGET)
        return Config(server=ServerConfig(data_dir=str(self.root), database="kvwatch.db"), hosts=(host,))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def restart(self) -> float:
        """A server start now (as after a restart with new flags); returns its log time."""
        now = time.time()
        self._write(self.server_log, READY.format(ts=stamp(now)))
        return math.floor(now)

    def ready_at(self, t: float) -> None:
        """The server's ready line stamped `t` (a start read after lines of other sources that followed it)."""
        self._write(self.server_log, READY.format(ts=stamp(t)))

    def complete(self) -> None:
        """One more line in the output file, whether paused or not."""
        self.done += 1
        self._write(self.outputs, json.dumps({"id": self.done, "response": "ok"}) + "\n")

    def pause(self) -> None:
        """No more lines until resume() (a quiet server: what is stored stops moving)."""
        with self._lock:
            self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    def log_decode(self, t: float, dp: int, tps: float) -> None:
        """One Decode batch line of rank `dp` stamped `t` (whole seconds, as SGLang stamps)."""
        self._write(self.server_log, DECODE.format(ts=stamp(t), dp=dp, running=60 + dp, token=150_000,
                                                   usage=0.97, tps=tps, queue=20 + dp))

    def _run(self) -> None:
        while not self._stop.wait(self.tick_s):
            if not self._paused.is_set():
                self._tick(time.time())

    def _tick(self, t: float) -> None:
        self.step += 1
        wave = math.sin(self.step / 40)
        lines = "".join(
            DECODE.format(ts=stamp(t), dp=dp, running=60 + dp, token=150_000 + 100 * self.step % 5000,
                          usage=0.97 + 0.015 * wave - 0.005 * dp, tps=900 + 100 * wave + dp, queue=max(0, 20 + dp))
            for dp in range(2)
        )
        self._write(self.server_log, lines)
        if self.step % 2 == 0:
            self.done += 1
            self._write(self.outputs, json.dumps({"id": self.done, "response": "ok"}) + "\n")
        if self.step % 10 == 0:
            self._write(self.client_log, TQDM.format(pct=100 * self.done // TARGET, done=self.done, total=TARGET))

    def _write(self, path: Path, text: str) -> None:
        with self._lock, path.open("a", encoding="utf-8") as handle:
            handle.write(text)

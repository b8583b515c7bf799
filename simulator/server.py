"""`python -m kvwatch.simulator.server --model-path ... [SGLang flags] [--sim-* flags]`: a simulated SGLang server.

It logs what SGLang logs (startup, capacity, Decode/Prefill batches, retractions, uvicorn access
lines), serves SGLang's HTTP endpoints on --host/--port, and ends like SGLang: on SIGTERM it drains
in-flight requests, then kills its own process tree (exit by SIGKILL, a shell's 137); on a crash it
logs the traceback and the SIGQUIT line and dies the same way. Unknown flags exit 2 with a usage line.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import signal
import sys
import threading
from types import FrameType
from typing import Any, TextIO

from kvwatch.simulator import flags, lifeline, logfmt, startup
from kvwatch.simulator.clock import SimClock
from kvwatch.simulator.engine import Engine, EngineConfig, Request
from kvwatch.simulator.httpapi import ApiServer
from kvwatch.simulator.logwriter import LogWriter
from kvwatch.simulator.spec import ServerSpec
from kvwatch.simulator.workload import lognormal, response_text

DRAIN_LOG_EVERY_S = 5.0


def spec_from_args(args: argparse.Namespace) -> ServerSpec:
    return ServerSpec(
        model_path=args.model_path, version=args.sim_version, host=args.host, port=args.port,
        tp_size=args.tp_size, dp_size=args.dp_size, mem_fraction_static=args.mem_fraction_static,
        kv_cache_dtype=args.kv_cache_dtype,
        enable_hierarchical_cache=bool(getattr(args, "enable_hierarchical_cache", False)),
        hicache_size=float(getattr(args, "hicache_size", 0) or 0),
        max_running_requests=args.max_running_requests,
        decode_log_interval=int(getattr(args, "decode_log_interval", 40) or 40),
        chunked_prefill_size=args.chunked_prefill_size, max_prefill_tokens=args.max_prefill_tokens,
        enable_metrics=args.enable_metrics, log_level=args.log_level, cuda_graph_max_bs=args.cuda_graph_max_bs,
    )


class SimServer:
    def __init__(self, args: argparse.Namespace, stream: TextIO) -> None:
        self.args = args
        self.spec = spec_from_args(args)
        self.clock = SimClock(args.sim_speed, args.sim_backfill, args.sim_warp,
                              wall_stamps=args.sim_stamps == "wall")
        self.log = LogWriter(stream, self.spec.fmt, self.clock, tp_size=self.spec.tp_size,
                             dp_size=max(self.spec.dp_size, 1))
        self.model_name = args.served_model_name or args.model_path
        capacity = self.spec.capacity()
        dp = max(self.spec.dp_size, 1)
        self.engines = [Engine(EngineConfig(
            max_total_num_tokens=capacity.max_total_num_tokens,
            max_running_requests=max(self.spec.max_running() // dp, 1),
            max_prefill_tokens=self.spec.max_prefill_tokens, decode_log_interval=self.spec.decode_log_interval,
            cuda_graph_max_bs=self.spec.graph_max_bs, dp_rank=rank if dp > 1 else None,
            seed=args.sim_seed * 1000 + rank,
        ), self.log) for rank in range(dp)]
        self.state = "starting"
        self.ready_t = 0.0
        self._rng = random.Random(args.sim_seed)
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._inflight: dict[str, Request] = {}
        self._term = threading.Event()
        self.httpd: ApiServer | None = None

    # -- used by the HTTP handlers ------------------------------------------------------------
    def healthy(self) -> bool:
        return self.state == "ready"

    def access(self, client: str, method: str, path: str, status: int) -> None:
        self.log.uvicorn(self.clock.sim_now(), logfmt.access_line(client, method, path, status))

    def run_request(self, prompt_tokens: int, max_new: int, hint: str | None) -> Request | None:
        """Queue a request on the next DP rank and wait until it finishes (None: server went away)."""
        done = threading.Event()
        with self._lock:
            n = next(self._ids)
            output = int(hint) if hint and hint.isdigit() else lognormal(self._rng, self.args.sim_response_mean)
        req = Request(rid=f"{n:032x}", prompt_tokens=prompt_tokens, output_tokens=max(output, 1),
                      max_new_tokens=max(max_new, 1), prefix_key="system", prefix_tokens=min(180, prompt_tokens),
                      on_done=lambda _req: done.set())
        self._inflight[req.rid] = req
        self.engines[n % len(self.engines)].submit(req)
        try:
            while not done.wait(0.5):
                if self.state == "dead":
                    return None
            return req
        finally:
            self._inflight.pop(req.rid, None)

    def text_for(self, req: Request) -> str:
        return response_text(random.Random(req.rid), req.total_generated)

    def server_info(self) -> dict[str, Any]:
        cap = self.spec.capacity()
        extra = {k: v for k, v in vars(self.args).items() if not k.startswith("sim_")}
        info = self.spec.server_args(extra)
        info.update(
            max_total_num_tokens=cap.max_total_num_tokens, max_req_input_len=self.spec.profile.context_len - 1,
            status=self.state, version=self.spec.version,
            internal_states=[{
                "last_gen_throughput": e.stats.last_gen_throughput,
                "memory_usage": {"weight": self.spec.profile.weights_gib, "kvcache": round(cap.kv_gib, 2),
                                 "token_capacity": cap.max_total_num_tokens, "graph": 1.21},
                "effective_max_running_requests_per_dp": e.cfg.max_running_requests,
            } for e in self.engines],
        )
        return info

    def model_info(self) -> dict[str, Any]:
        return {"model_path": self.args.model_path, "tokenizer_path": self.args.tokenizer_path or
                self.args.model_path, "is_generation": True}

    def model_card(self) -> dict[str, Any]:
        return {"id": self.model_name, "object": "model", "owned_by": "sglang", "root": self.args.model_path,
                "max_model_len": self.spec.profile.context_len}

    def loads(self) -> list[dict[str, Any]]:
        return [{"dp_rank": e.cfg.dp_rank or 0, "num_reqs": len(e.running) + len(e.waiting),
                 "num_waiting_reqs": len(e.waiting), "num_tokens": e.used} for e in self.engines]

    # -- lifecycle ----------------------------------------------------------------------------
    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self._term.set()

    def _die(self) -> None:
        """SGLang's kill_process_tree(include_parent=True) ends with SIGKILL to itself."""
        self.state = "dead"
        self.log.stream.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def _boot(self) -> float | None:
        """Startup lines; None if the configuration cannot start (the crash is logged)."""
        t = startup.write_boot(self.log, self.spec, self._extra_args(), self.args.sim_load_s)
        cap = self.spec.capacity()
        if cap.max_total_num_tokens <= 0 or cap.oom:
            startup.write_crash(self.log, self.spec, t + 1.0, "no_memory" if cap.max_total_num_tokens <= 0
                                else "oom")
            return None
        return startup.write_capacity(self.log, self.spec, t, self.args.sim_load_s)

    def _extra_args(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self.args).items() if not k.startswith("sim_")}

    def _bind(self, t: float) -> bool:
        try:
            self.httpd = ApiServer(self)
        except OSError as exc:
            self.log.write_raw(f"[{self.log.stamp(t)}] ERROR:    [Errno {exc.errno}] error while attempting "
                               f"to bind on address ('{self.spec.host}', {self.spec.port}): {exc.strerror}")
            return False
        threading.Thread(target=self.httpd.serve_forever, name="http", daemon=True).start()
        return True

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_sigterm)
        t = self._boot()
        if t is None:
            self._die()
            return 137
        if not self._bind(t):
            return 1
        self.ready_t = startup.write_ready(self.log, self.spec, t, os.getpid())
        for engine in self.engines:
            engine.t = self.ready_t
        self.state = "ready"
        fail_at = None if self.args.sim_fail_after is None else self.ready_t + self.args.sim_fail_after
        while not self._term.wait(0.02):
            target = self.clock.sim_now()
            if fail_at is not None and target >= fail_at:
                self._advance(fail_at)
                startup.write_crash(self.log, self.spec, fail_at, self.args.sim_fail_mode)
                self._die()
            self._advance(target)
        return self._shutdown()

    def _advance(self, target: float) -> None:
        for engine in self.engines:
            engine.advance_to(target)

    def _shutdown(self) -> int:
        t = self.clock.sim_now()
        if self.spec.fmt.sigterm_style == "plain":
            startup.write_uvicorn_shutdown(self.log, t, os.getpid())
            self.state = "dead"
            return 0
        self.state = "draining"
        startup.write_sigterm(self.log, t)
        deadline = t + self.args.sim_drain_timeout
        next_line = t
        while True:
            now = self.clock.sim_now()
            self._advance(now)
            rids = list(self._inflight)
            if now >= next_line or not rids:
                startup.write_draining(self.log, now, rids)
                next_line = now + DRAIN_LOG_EVERY_S
            if not rids or now >= deadline:
                break
            self._term.wait(0.02)
        startup.write_kill_tree(self.log, self.spec, self.clock.sim_now(), os.getpid())
        self._die()
        return 137


def open_log(args: argparse.Namespace) -> TextIO:
    if args.sim_log_file is None:
        return sys.stdout
    args.sim_log_file.parent.mkdir(parents=True, exist_ok=True)
    return open(args.sim_log_file, "a", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = flags.parse_args(sys.argv[1:] if argv is None else argv)
    if args.sim_pid_file is not None:
        args.sim_pid_file.parent.mkdir(parents=True, exist_ok=True)
        args.sim_pid_file.write_text(f"{os.getpid()}\n", encoding="utf-8")
    if args.sim_pid_dir is not None:
        args.sim_pid_dir.mkdir(parents=True, exist_ok=True)
        (args.sim_pid_dir / str(os.getpid())).touch()
    server = SimServer(args, open_log(args))
    if args.sim_parent_pid is not None:
        lifeline.watch_parent(args.sim_parent_pid, server._term.set)
    if args.sim_watch_pid is not None:
        lifeline.watch_pid(args.sim_watch_pid, server._term.set)
    return server.run()


if __name__ == "__main__":
    sys.exit(main())

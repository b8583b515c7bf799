"""The startup and shutdown lines of a simulated SGLang server, in the order the real one logs them."""

from __future__ import annotations

from typing import Any

from kvwatch.simulator import logfmt
from kvwatch.simulator.logwriter import LogWriter
from kvwatch.simulator.spec import ServerSpec

WEIGHT_LOAD_S = 30.0  # simulated; a real 1T-parameter load takes minutes, the demo cannot wait that long
GRAPH_CAPTURE_S = 8.0


def durations(load_s: float | None) -> tuple[float, float]:
    """(weight loading, CUDA graph capture) in simulated seconds; `load_s` splits as 30 : 8 does."""
    if load_s is None:
        return WEIGHT_LOAD_S, GRAPH_CAPTURE_S
    share = WEIGHT_LOAD_S / (WEIGHT_LOAD_S + GRAPH_CAPTURE_S)
    return load_s * share, load_s * (1 - share)


def write_boot(log: LogWriter, spec: ServerSpec, extra_args: dict[str, Any] | None = None,
               load_s: float | None = None) -> float:
    """From `server_args=` to the capacity line; returns the simulated time reached."""
    fmt, cap, prof = spec.fmt, spec.capacity(), spec.profile
    total = 140.4
    t = 0.0
    line = logfmt.server_args_line(fmt, spec.server_args(extra_args))
    if line is not None:
        log.untagged(t, line)
    t += 2.0
    log.all_ranks(t, f"Init torch distributed ends. mem usage={0.9:.2f} GB")
    log.rank(t, f"Load weight begin. avail mem={total - 1.3:.2f} GB")
    weights_s = durations(load_s)[0]
    t += weights_s
    avail = total - 1.3 - prof.weights_gib
    log.rank(t, logfmt.load_weight_end(fmt, prof.architecture, avail, prof.weights_gib, weights_s))
    if cap.max_total_num_tokens <= 0:
        return t
    kv_line = logfmt.kv_cache_line(fmt, cap.max_total_num_tokens, cap.kv_gib, spec.torch_dtype(), prof.mla)
    if kv_line is not None:
        log.rank(t, kv_line)
    log.rank(t, f"Memory pool end. avail mem={avail - cap.kv_gib:.2f} GB")
    if spec.enable_hierarchical_cache:
        from kvwatch.simulator.capacity import host_pool_tokens

        size = spec.hicache_size or 2.0 * cap.kv_gib
        log.all_ranks(t, logfmt.hicache_line(fmt, size, host_pool_tokens(prof, size, spec.kv_cache_dtype)))
    t += 0.5
    log.rank(t, "Capture cuda graph begin. This can take up to several minutes. "
                f"avail mem={avail - cap.kv_gib:.2f} GB")
    return t


def write_capacity(log: LogWriter, spec: ServerSpec, t: float, load_s: float | None = None) -> float:
    fmt, cap = spec.fmt, spec.capacity()
    graph_s = durations(load_s)[1]
    t += graph_s
    log.rank(t, f"Capture cuda graph end. Time elapsed: {graph_s:.2f} s. mem usage=1.21 GB. "
                f"avail mem={cap.available_gpu_mem_gib:.2f} GB.")
    line = logfmt.capacity_line(fmt, cap.max_total_num_tokens, spec.chunked, spec.max_prefill_tokens,
                                spec.max_running(), spec.profile.context_len, cap.available_gpu_mem_gib)
    if fmt.capacity_every_rank:
        log.all_ranks(t, line)
    else:
        log.rank(t, line)
    return t


SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
CRASHES: dict[str, tuple[str, ...]] = {
    "oom": (
        f'  File "{SITE}/managers/scheduler.py", line 3011, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
        f'  File "{SITE}/model_executor/cuda_graph_runner.py", line 391, in capture',
        "    out = self.capture_one_batch_size(bs, forward)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total capacity "
        "of 139.81 GiB of which 312.00 MiB is free.",
    ),
    "no_memory": (
        f'  File "{SITE}/managers/scheduler.py", line 3011, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
        f'  File "{SITE}/model_executor/model_runner.py", line 1502, in init_memory_pool',
        '    raise RuntimeError(',
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ),
    "exception": (
        f'  File "{SITE}/managers/scheduler.py", line 3015, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        f'  File "{SITE}/managers/scheduler.py", line 1074, in event_loop_overlap',
        "    batch_result = self.run_batch(batch)",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ),
}


def write_crash(log: LogWriter, spec: ServerSpec, t: float, kind: str) -> None:
    """A scheduler exception (or a watchdog timeout), then the launcher's SIGQUIT line."""
    if kind == "watchdog":
        if logfmt.at_least(spec.version, "0.5.8"):
            log.rank(t, "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)")
        else:
            log.rank(t, "Watchdog timeout (self.watchdog_timeout=300)")
    else:
        log.rank(t, "Scheduler hit an exception: Traceback (most recent call last):")
        for text in CRASHES[kind]:
            log.write_raw(text)
        log.write_raw("")
    if logfmt.at_least(spec.version, "0.5.3") and kind in ("exception", "watchdog"):
        log.untagged(t + 0.1, "SIGQUIT received. signum=3, frame=None. It usually means one child failed.")
    elif logfmt.at_least(spec.version, "0.4.6"):
        log.untagged(t + 0.1, "Received sigquit from a child process. It usually means the child failed.")


def write_ready(log: LogWriter, spec: ServerSpec, t: float, pid: int) -> float:
    """uvicorn's start lines, the warm-up request, then the ready line."""
    log.uvicorn(t, f"Started server process [{pid}]")
    log.uvicorn(t, "Waiting for application startup.")
    log.uvicorn(t, "Application startup complete.")
    log.uvicorn(t, f"Uvicorn running on http://{spec.host}:{spec.port} (Press CTRL+C to quit)")
    t += 1.0
    log.uvicorn(t, logfmt.access_line("127.0.0.1:45538", "GET", "/model_info"
                                      if logfmt.at_least(spec.version, "0.5.8") else "/get_model_info", 200))
    log.uvicorn(t, logfmt.access_line("127.0.0.1:45546", "POST", "/generate", 200))
    log.untagged(t, "The server is fired up and ready to roll!")
    return t


def write_sigterm(log: LogWriter, t: float) -> None:
    log.untagged(t, "SIGTERM received. signum=15 frame=None. Draining requests and shutting down...")


def write_draining(log: LogWriter, t: float, rids: list[str]) -> None:
    """The tokenizer manager's line, every 5 s while requests remain, then once at zero."""
    shown = rids[:8]
    log.untagged(t, f"Gracefully exiting... Remaining number of requests {len(rids)}. "
                    f"Remaining requests remaining_rids={shown!r}.")


def write_kill_tree(log: LogWriter, spec: ServerSpec, t: float, pid: int) -> None:
    if logfmt.at_least(spec.version, "0.5.13"):
        log.untagged(t, f"kill_process_tree called: parent_pid={pid}, include_parent=True, pid={pid}")


def write_uvicorn_shutdown(log: LogWriter, t: float, pid: int) -> None:
    for text in ("Shutting down", "Waiting for application shutdown.", "Application shutdown complete.",
                 f"Finished server process [{pid}]"):
        log.uvicorn(t, text)

"""Literal answers of GET /api/hosts/{name}/status and /api/runs/{id}/steady, as a kvwatch gives them."""

from __future__ import annotations

from typing import Any

AS_OF = 1_772_000_000.0  # 2026-02-25 06:13:20 UTC

SATURATED: dict[str, Any] = {
    "host": "gpu1",
    "run": {
        "id": "gpu1-20260225T060000",
        "flags": {"model-path": "/models/Kimi-K2.5", "tp-size": 8, "mem-fraction-static": 0.88,
                  "enable-hierarchical-cache": True, "hicache-size": 48, "enable-metrics": True},
        "defining_flags": {"tp-size": 8, "mem-fraction-static": 0.88, "enable-hierarchical-cache": True,
                           "hicache-size": 48},
        "state": "running",
        "started_at": AS_OF - 800.0,
        "ready_at": AS_OF - 760.0,
        "ended_at": None,
        "capacity": {"max_total_num_tokens": 159_000},
    },
    "gen_throughput": 930.63,
    "token_usage": 0.96,
    "running_req": 72.0,
    "queue_req": 79.0,
    "completions": 1804.0,
    "completion_rate": 1.25,
    "eta_s": 69_000.0,
    "alerts": [{"rule": "token_usage_high", "state": "firing", "since": AS_OF - 250.0, "value": 0.97,
                "severity": "warn", "title": "KV token usage high", "summary": "usage 0.97 > 0.95"}],
    "verdict": None,
    "as_of": AS_OF,
    "gen_throughput_mean_5min": 912.44,
    "sampled_at": {"gen_throughput": AS_OF - 3.0, "token_usage": AS_OF - 3.0, "running_req": AS_OF - 3.0,
                   "queue_req": AS_OF - 3.0, "completions": AS_OF - 1.0, "completion_rate": AS_OF - 1.0},
    "target_completions": 88_000,
    "completions_by_dataset": {"B2_opencodeinstruct": 1604.0, "B6": 200.0},
    "completion_pace": 1.25,
    "client": {"done": 1604.0, "total": 3500.0, "age_s": 12.0, "silent": False},
    "collector": {"state": "up", "last_error": None},
}

EMPTY: dict[str, Any] = {
    "host": "gpu2",
    "run": None,
    "gen_throughput": None,
    "token_usage": None,
    "running_req": None,
    "queue_req": None,
    "completions": None,
    "completion_rate": None,
    "eta_s": None,
    "alerts": [],
    "verdict": None,
    "as_of": AS_OF,
    "gen_throughput_mean_5min": None,
    "sampled_at": {},
    "target_completions": None,
    "completions_by_dataset": {},
    "completion_pace": None,
    "client": None,
    "collector": {"state": "connecting", "last_error": None},
}

STEADY: dict[str, Any] = {
    "run": "gpu1-20260225T060000", "host": "gpu1", "start": AS_OF - 600.0, "end": AS_OF - 3.0,
    "start_offset_s": 200.0, "end_offset_s": 797.0, "duration_s": 597.0, "status": "steady", "auto": True,
    "message": "", "warmup_end_by_metric": {"gen_throughput": 150.0},
}

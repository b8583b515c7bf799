"""Which catalog series `/metrics` exposes to Prometheus, under which name: Prometheus names carry
their unit in base units (`_bytes`, `_per_second`), so a series may be scaled on the way out. The help
text of each (label, unit, how the host's parts combine) is the catalog's own (labels.catalog_help)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Exposed:
    metric: str  # a catalogued series
    name: str  # its Prometheus name
    factor: float = 1.0  # exposed value = stored value * factor
    unit: str | None = None  # the exposed unit where the factor changes the catalog's
    per_gpu: bool = False  # one sample per GPU (label `gpu`) instead of the host's value


EXPOSED: tuple[Exposed, ...] = (
    Exposed("token_usage", "kvwatch_token_usage"),
    Exposed("running_req", "kvwatch_running_requests"),
    Exposed("queue_req", "kvwatch_queued_requests"),
    Exposed("gen_throughput", "kvwatch_gen_throughput_tokens_per_second"),
    Exposed("input_throughput", "kvwatch_input_throughput_tokens_per_second"),
    Exposed("token", "kvwatch_tokens_in_use"),
    Exposed("completions", "kvwatch_completions"),
    Exposed("gpu_util_pct", "kvwatch_gpu_utilization_percent", per_gpu=True),
    Exposed("gpu_mem_used_mib", "kvwatch_gpu_memory_used_bytes", 1024.0 * 1024.0, "bytes", per_gpu=True),
)

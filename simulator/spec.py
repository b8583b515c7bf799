"""A resolved server configuration: flags after defaults, plus the capacity they give."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvwatch.simulator import capacity, logfmt


@dataclass(frozen=True, slots=True)
class ServerSpec:
    model_path: str
    version: str = logfmt.DEFAULT_VERSION
    host: str = "127.0.0.1"
    port: int = 30000
    tp_size: int = 1
    dp_size: int = 1
    mem_fraction_static: float | None = None
    kv_cache_dtype: str = "auto"
    enable_hierarchical_cache: bool = False
    hicache_size: float = 0.0
    max_running_requests: int | None = None
    decode_log_interval: int = 40
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int = 16384
    enable_metrics: bool = False
    log_level: str = "info"
    cuda_graph_max_bs: int | None = None

    @property
    def fmt(self) -> logfmt.VersionFormat:
        return logfmt.VERSIONS[self.version]

    @property
    def profile(self) -> capacity.ModelProfile:
        return capacity.profile_for(self.model_path)

    @property
    def mem_fraction(self) -> float:
        if self.mem_fraction_static is not None:
            return self.mem_fraction_static
        return capacity.default_mem_fraction(self.profile)

    def capacity(self) -> capacity.Capacity:
        return capacity.kv_capacity(self.profile, self.mem_fraction, self.kv_cache_dtype, self.tp_size)

    @property
    def chunked(self) -> int:
        return self.chunked_prefill_size if self.chunked_prefill_size is not None else 8192

    @property
    def graph_max_bs(self) -> int:
        return self.cuda_graph_max_bs if self.cuda_graph_max_bs is not None else 256

    def max_running(self) -> int:
        """SGLang's auto value: bounded by the token pool and the request-to-token pool."""
        if self.max_running_requests is not None:
            return self.max_running_requests
        auto = self.capacity().max_total_num_tokens // 2 // max(self.dp_size, 1)
        return max(min(auto, self.profile.max_running_default), 1)

    def torch_dtype(self) -> str:
        if self.kv_cache_dtype in ("fp8_e4m3", "mxfp8"):
            return "torch.float8_e4m3fn"
        if self.kv_cache_dtype == "fp8_e5m2":
            return "torch.float8_e5m2"
        return "torch.bfloat16"

    def server_args(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The effective args in ServerArgs field order, as SGLang logs and serves them."""
        args: dict[str, Any] = {
            "model_path": self.model_path,
            "tokenizer_path": self.model_path,
            "host": self.host,
            "port": self.port,
            "mem_fraction_static": self.mem_fraction,
            "max_running_requests": self.max_running(),
            "max_total_tokens": None,
            "chunked_prefill_size": self.chunked,
            "max_prefill_tokens": self.max_prefill_tokens,
            "schedule_conservativeness": 1.0,
            "tp_size": self.tp_size,
            "dp_size": self.dp_size,
            "kv_cache_dtype": self.kv_cache_dtype,
            "context_length": None,
            "enable_hierarchical_cache": self.enable_hierarchical_cache,
            "hicache_ratio": 2.0,
            "hicache_size": self.hicache_size,
            "decode_log_interval": self.decode_log_interval,
            "enable_metrics": self.enable_metrics,
            "log_level": self.log_level,
            "cuda_graph_max_bs": self.graph_max_bs,
            "random_seed": 0,
            "watchdog_timeout": 300,
        }
        for key, value in (extra or {}).items():
            args.setdefault(key, value)
        return args

"""Prometheus text exposition (SGLang and vLLM /metrics) -> `stats` records.

One record per scrape and label set: the identity labels (model, engine, ranks) go to `labels`, ranks
also to `tags` (`{"DP": 0, "TP": 0}`) like the log records. Metric names lose the `sglang:`,
`sglang_`, `vllm:` or `vllm_` prefix; the gauges the dashboard plots get the log names
(`num_running_reqs` -> `running_req`, `gpu_cache_usage_perc` -> `token_usage`, ...), the rest keep
theirs by the naming rule; other labels are appended to the name (`cached_tokens_total_device`).
Histogram buckets, quantiles and `_created` samples are skipped.

A scrape ends at `flush()`, at `# EOF`, or when a series repeats (a new scrape began): feed one
scrape's lines, then call flush(). Samples carry no time unless the exposition gives one (ms),
so `ts` is set only then; the caller stamps the rest with the scrape time.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import ClassVar

from kvwatch.parsers.base import ParseHealth, Record
from kvwatch.parsers.values import field_name

_SAMPLE = re.compile(
    r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[^\"}]|\"(?:[^\"\\]|\\.)*\")*)\})?"
    r"[ \t]+(\S+)(?:[ \t]+(-?\d+))?[ \t]*"
)
_LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*\"((?:[^\"\\]|\\.)*)\"")
_PREFIXES = ("sglang:", "sglang_", "vllm:", "vllm_")
_GAUGES = {
    "num_running_reqs": "running_req",
    "num_queue_reqs": "queue_req",
    "num_used_tokens": "token",
    "num_requests_running": "running_req",
    "num_requests_waiting": "queue_req",
    "num_requests_swapped": "swapped_req",
    "gpu_cache_usage_perc": "token_usage",
    "kv_cache_usage_perc": "token_usage",
    "cpu_cache_usage_perc": "cpu_token_usage",
}
_IDENTITY = {
    "model_name",
    "engine_type",
    "engine",
    "tp_rank",
    "pp_rank",
    "dp_rank",
    "moe_ep_rank",
    "attn_cp_rank",
}
_RANK_TAGS = {
    "dp_rank": "DP",
    "pp_rank": "PP",
    "attn_cp_rank": "ATTN_CP",
    "tp_rank": "TP",
    "moe_ep_rank": "EP",
}
_SKIPPED_SUFFIXES = ("_bucket", "_created")


def _unescape(value: str) -> str:
    return value.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")


def _value(raw: str) -> int | float | None:
    try:
        number = float(raw)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() and abs(number) < 2**63 else number


def _metric(name: str, extra: dict[str, str]) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    name = _GAUGES.get(name, name)
    return field_name("_".join([name, *extra.values()]))


def _stamp(ms: str) -> str | None:
    try:
        return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    except (ValueError, OverflowError, OSError):
        return None


class PrometheusParser:
    name: ClassVar[str] = "prometheus"

    def __init__(self) -> None:
        self.health = ParseHealth()
        self._groups: dict[tuple[tuple[str, str], ...], Record] = {}
        self._seen: set[tuple[str, str]] = set()

    def feed(self, line_no: int, text: str) -> list[Record]:
        self.health.lines += 1
        text = text.strip()
        if not text or text.startswith("#"):
            return self.flush() if text == "# EOF" else []
        try:
            return self._sample(line_no, text)
        except Exception:  # never raise: one odd line must not stop the stream
            self.health.unparsed += 1
            return []

    def flush(self) -> list[Record]:
        records = list(self._groups.values())
        self._groups.clear()
        self._seen.clear()
        self.health.records += len(records)
        return records

    def _sample(self, line_no: int, text: str) -> list[Record]:
        match = _SAMPLE.fullmatch(text)
        value = None if match is None else _value(match[3])
        if match is None or value is None:
            self.health.unparsed += int(match is None)
            return []
        name, labels_text = match[1], match[2] or ""
        if name.endswith(_SKIPPED_SUFFIXES):
            return []
        done = self.flush() if (name, labels_text) in self._seen else []
        self._seen.add((name, labels_text))
        labels = {key: _unescape(raw) for key, raw in _LABEL.findall(labels_text)}
        if "le" in labels or "quantile" in labels:
            return done
        identity = tuple(sorted((k, v) for k, v in labels.items() if k in _IDENTITY))
        record = self._groups.get(identity)
        if record is None:
            record = self._groups[identity] = self._new_record(line_no, dict(identity), match[4])
        record[_metric(name, {k: v for k, v in labels.items() if k not in _IDENTITY})] = value
        return done

    @staticmethod
    def _new_record(line_no: int, labels: dict[str, str], ms: str | None) -> Record:
        record: Record = {"kind": "stats", "line": line_no}
        ts = _stamp(ms) if ms else None
        if ts is not None:
            record["ts"] = ts
        record["source"] = "prometheus"
        record["labels"] = labels
        record["tags"] = {tag: int(labels[key]) for key, tag in _RANK_TAGS.items() if labels.get(key, "").isdecimal()}
        if labels.get("engine", "").isdecimal():
            record["engine"] = int(labels["engine"])
        return record

"""vLLM server log: V0 and V1 periodic stats, startup capacity, args, events, tracebacks.

V0 `INFO 01-22 18:27:20 metrics.py:449] Avg prompt throughput: 0.0 tokens/s, Avg generation
throughput: 41.7 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 2.0%,
CPU KV cache usage: 0.0%.` and V1 `(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000:
Avg prompt throughput: ..., Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, Prefix cache
hit rate: 0.0%` -> `stats`, as are `N Engines Aggregated: ...` (`engine: "aggregated"`, `engines: N`),
the `MFU: 6.6 TF/s/GPU 105.0 GB/s/GPU` part or line (`mfu_tflops_per_gpu`, `mfu_gbps_per_gpu`) and
`SpecDecoding metrics: ...` (`mean_acceptance_length`, `accepted`, `drafted`, the list
`per_position_acceptance_rate`, `avg_draft_acceptance_rate`, ...). `Deferred: N reqs` -> `deferred_req`
(already counted in `Waiting`). vLLM stamps have no year: `ts` is `01-22T18:27:20` (to_epoch takes the
year from its reference day). vLLM repeats its prefix on every line of a traceback.
Startup: `GPU KV cache size: N tokens` and V0 `# GPU blocks: N, # CPU blocks: M` -> `capacity`
(`max_total_num_tokens`; `gpu_blocks`, `cpu_blocks`); `Maximum concurrency for X tokens per request: Yx`
-> `capacity` (`max_model_len`, `max_concurrency`); `Available KV cache memory: X GiB` (V1) and V0's
`Memory profiling results: name=value ...` (sizes in GiB named `<name>_gib`) -> `kv_cache`.
Health: a line in a known layout with nothing to chart is `ignored`; a stats line that gives no
record, or a line in no known layout, is `unparsed`.
"""

from __future__ import annotations

import re
from typing import ClassVar

from kvwatch.parsers.base import ParseHealth, Record
from kvwatch.parsers.events import TracebackMixin, event_of, event_record, open_block
from kvwatch.parsers.header import Header, parse_header, stamp
from kvwatch.parsers.joins import split_joined
from kvwatch.parsers.prefixes import close_backticks, peel, strip_ansi, strip_repeats
from kvwatch.parsers.requestlog import is_request_log
from kvwatch.parsers.server_args import parse_args_dump
from kvwatch.parsers.sglang import is_access_line
from kvwatch.parsers.values import Value, field_key, field_value

_STATS_NAMES = {
    "avg_prompt_throughput": "prompt_throughput",
    "avg_generation_throughput": "gen_throughput",
    "running": "running_req",
    "waiting": "queue_req",
    "pending": "queue_req",
    "swapped": "swapped_req",
    "deferred": "deferred_req",
    "corrupted": "corrupted_req",
    "gpu_kv_cache_usage": "token_usage",
    "cpu_kv_cache_usage": "cpu_token_usage",
}
_ENGINE = re.compile(r"(?:Engine (\d+)|(\d+) Engines Aggregated): ")
_SPEC_MARKERS = ("SpecDecoding metrics: ", "Speculative metrics: ")
_STATS_STARTS = ("Avg prompt throughput: ", "MFU: ", *_SPEC_MARKERS)
_MFU = re.compile(r"([\d.]+) TF/s/GPU ([\d.]+) GB/s/GPU")
_LIST_FIELDS = frozenset({"per_position_acceptance_rate"})
_CAPACITY = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_BLOCKS = re.compile(r"# GPU blocks: (\d+)(?:, # CPU blocks: (\d+))?")
_KV_MEMORY = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
# `Maximum concurrency for 2,048 tokens per request: 997.08x`: the KV pool over max_model_len.
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
# V0 `Memory profiling results: total_gpu_memory=23.58GiB ... kv_cache_size=3.81GiB gpu_memory_utilization=0.90`
_PROFILE = "Memory profiling results: "
_PROFILE_ITEM = re.compile(r"(\w+)=([\d.]+)(GiB)?")
_ARGS_MARKERS = ("non-default args: ", "args: ")


def _fields(record: Record, body: str, health: ParseHealth) -> None:
    """`Key: value` parts into `record` by the naming rule; bare numbers extend a list field
    (`Per-position acceptance rate: 0.9, 0.8`), `MFU: 6.6 TF/s/GPU 105.0 GB/s/GPU` gives two fields."""
    listed: list[Value] | None = None
    for part in body.rstrip(", .").split(", "):
        key, found, raw = part.partition(": ")
        if not found:
            if listed is not None:
                listed.append(field_value(part))
            continue
        name = field_key(key)
        name = _STATS_NAMES.get(name, name)
        listed = None
        if not name:
            health.unknown_keys += 1
        if name in _LIST_FIELDS:
            record[name] = listed = [field_value(raw)]
        elif name == "mfu" and (mfu := _MFU.fullmatch(raw.strip())) is not None:
            record["mfu_tflops_per_gpu"] = float(mfu[1])
            record["mfu_gbps_per_gpu"] = float(mfu[2])
        elif name:
            record[name] = field_value(raw)


def _stats(line_no: int, header: Header, message: str, health: ParseHealth) -> Record | None:
    """V0/V1 periodic stats, the spec-decoding line and the MFU line -> `stats`, or None."""
    record: Record = {"kind": "stats", "line": line_no}
    stamp(record, header)
    engine = _ENGINE.match(message)
    if engine is not None:
        record["engine"] = int(engine[1]) if engine[1] else "aggregated"
        if engine[2]:
            record["engines"] = int(engine[2])
        message = message[engine.end() :]
    if not message.startswith(_STATS_STARTS):
        return None  # the words stand inside another message, not where a stats line starts
    for marker in _SPEC_MARKERS:
        if message.startswith(marker):
            _fields(record, message[len(marker) :], health)
            return record if len(record) > 3 else None
    _fields(record, message, health)
    # The line's one number every stats line has must be a number, or the line is not read at all.
    return record if _is_number(record.get("gen_throughput", record.get("mfu_tflops_per_gpu"))) else None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _startup(line_no: int, header: Header, message: str) -> Record | None:
    record: Record = {"line": line_no}
    stamp(record, header)
    if (match := _CAPACITY.match(message)) is not None:
        return {"kind": "capacity", **record, "max_total_num_tokens": int(match[1].replace(",", ""))}
    if (match := _BLOCKS.match(message)) is not None:
        blocks = {"gpu_blocks": int(match[1])} | ({"cpu_blocks": int(match[2])} if match[2] else {})
        return {"kind": "capacity", **record, **blocks}
    if (match := _KV_MEMORY.match(message)) is not None:
        return {"kind": "kv_cache", **record, "available_kv_cache_memory": float(match[1])}
    if (match := _CONCURRENCY.match(message)) is not None:
        return {"kind": "capacity", **record, "max_model_len": int(match[1].replace(",", "")),
                "max_concurrency": float(match[2])}
    if message.startswith(_PROFILE):
        items = {f"{k}_gib" if unit else k: float(v) for k, v, unit in _PROFILE_ITEM.findall(message[len(_PROFILE):])}
        if items:
            return {"kind": "kv_cache", **record, **items}
    for marker in _ARGS_MARKERS:
        if message.startswith(marker):
            args = parse_args_dump(message[len(marker) :])
            if args is not None:
                return {"kind": "server_args", **record, "args": args}
    return None


def _event(message: str, is_error: bool) -> str | None:
    if "Application startup complete" in message:
        return "ready"
    if "is preempted by" in message:
        return "retract"
    return event_of(message) or ("error" if is_error else None)


class VllmParser(TracebackMixin):
    name: ClassVar[str] = "vllm"

    def __init__(self) -> None:
        self.health = ParseHealth()

    def _feed(self, line_no: int, text: str) -> list[Record]:
        text = close_backticks(strip_repeats(strip_ansi(text)))
        header = parse_header(text)
        parts = split_joined(text, len(text) - len(header.message))
        if len(parts) == 1:
            return self._one(line_no, text, header)
        return [record for part in parts for record in self._one(line_no, part, parse_header(part))]  # pasted

    def _one(self, line_no: int, text: str, header: Header) -> list[Record]:
        done, consumed = self._through_block(header.message, header.found and not header.shipped_only)
        if consumed:
            return done
        return done + self._line(line_no, text, header)

    def _line(self, line_no: int, text: str, header: Header) -> list[Record]:
        message = header.message
        if is_request_log(message):
            self.health.ignored += 1
            return []
        # Periodic stats: one that gives no record is unparsed, never ignored.
        stats_like = "throughput: " in message or "metrics: " in message or "MFU: " in message
        if stats_like:
            record = _stats(line_no, header, message, self.health)
            if record is not None:
                return [record]
        if is_access_line(text):
            self.health.access += 1
            return []
        record = _startup(line_no, header, message)
        if record is not None:
            return [record]
        block = open_block(line_no, header.ts, {}, message, repeated_headers=True, tz=header.tz)
        if block is not None:
            done = self._flush_block()
            self._block = block
            return done
        event = _event(message, peel(text).rest.startswith(("ERROR", "CRITICAL")))
        if event is not None:
            return [event_record(line_no, header.ts, {}, event, message, header.tz)]
        # A vLLM line that says nothing we chart is not a parse failure; a stats line we could
        # not read, or a line in no known layout, is.
        if header.found and not stats_like:
            self.health.ignored += 1
        else:
            self.health.unparsed += 1
        return []

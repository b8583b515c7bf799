"""SGLang server log, every release 0.2 -> 0.5.23 (formats: reference/sglang-and-vllm-log-formats.md).

- `Decode batch` / `Prefill batch` lines -> `decode` / `prefill` (key/value pairs, not a fixed
  regex: any order, unknown keys kept, `[N]` iteration counter -> `iter`, trailing `, ` or not;
  a hybrid model's per-pool values also give `token_usage` and `token`: parsers.sglang);
- `max_total_num_tokens=...` -> `capacity`; `KV Cache is allocated. ...` -> `kv_cache`;
- `server_args=...` -> `server_args` with the flags as a dict in `args`;
- events and multi-line tracebacks -> `event` (see parsers.events);
- uvicorn access lines -> counted in `health.access`, no record.

Example: `[2026-02-24 12:49:14 TP0] Decode batch, #running-req: 72, #token: 153179, token usage: 0.96,
cuda graph: True, gen throughput (token/s): 930.63, #queue-req: 79`
"""

from __future__ import annotations

from typing import Any, ClassVar

from kvwatch.parsers.base import ParseHealth, Record
from kvwatch.parsers.events import TracebackMixin, event_of, event_record, open_block
from kvwatch.parsers.header import Header, parse_header, search_header, stamp
from kvwatch.parsers.joins import split_joined
from kvwatch.parsers.prefixes import close_backticks, peel, strip_ansi, strip_repeats, unwrap
from kvwatch.parsers.requestlog import is_request_log
from kvwatch.parsers.server_args import parse_args_dump
from kvwatch.parsers.shapes import BatchShapes
from kvwatch.parsers.values import field_key, field_name, field_value, split_pairs

__all__ = ["SglangParser", "field_name", "field_value", "is_access_line", "parse_batch"]

_NAMES: dict[str, str] = {}


# A hybrid model's KV pools, totalled as SGLang's own scheduler totals them.
#
# A model with sliding-window layers (gpt-oss, MiMo, Llama 4, DeepSeek-V4) or Mamba layers (Qwen3-Next)
# keeps several pools, and its batch lines log each one instead of `#token` / `token usage`:
#
#     Decode batch, #running-req: 56, #full token: 20224, full token usage: 0.00, #swa token: 14976,
#     swa token usage: 0.05, ..., gen throughput (token/s): 1234.56, #queue-req: 0
#     Prefill batch, ..., full token usage: 0.01, mamba usage: 0.40, #running-req: 3, ...
#
# SGLang's `PoolStats` (sglang/srt/managers/scheduler_pool_stats.py, 0.5.x) reports the fullest pool
# as the server's token usage (`sglang:token_usage` = max of full, swa and mamba usage) and the larger
# of the full and swa pools' counts as its used tokens (`num_used_tokens`; a mamba pool counts request
# slots, not tokens). The record gets those as `token_usage` and `token`, so the usage chart, the
# 0.95 alert, the diagnosis and the comparison read a hybrid run like any other; the per-pool fields
# stay as logged. A line that logs `token usage` itself is left alone.

USAGE_PARTS = ("full_token_usage", "swa_token_usage", "mamba_usage")
TOKEN_PARTS = ("full_token", "swa_token")


def _fullest(record: dict[str, Any], parts: tuple[str, ...]) -> int | float | None:
    values = [record[name] for name in parts if isinstance(record.get(name), int | float)
              and not isinstance(record.get(name), bool)]
    return max(values) if values else None


def add_pool_totals(record: dict[str, Any]) -> None:
    """Add `token_usage` and `token` to a batch record that logs per-pool values only."""
    if "token_usage" not in record:
        usage = _fullest(record, USAGE_PARTS)
        if usage is not None:
            record["token_usage"] = usage
    if "token" not in record and "full_token" in record:
        used = _fullest(record, TOKEN_PARTS)
        if used is not None:
            record["token"] = used


def is_access_line(text: str) -> bool:
    """uvicorn's `127.0.0.1:40418 - "GET / HTTP/1.1" 404 Not Found`."""
    return ' - "' in text and " HTTP/" in text


def _batch_start(text: str) -> tuple[int, str] | None:
    """(index of `Decode`/`Prefill`, kind) of the first ` batch` that follows one of them."""
    index = text.find(" batch")
    while index != -1:
        if text.startswith("Decode", index - 6):
            return index - 6, "decode"
        if text.startswith("Prefill", index - 7):
            return index - 7, "prefill"
        index = text.find(" batch", index + 6)
    return None


def _body_fields(record: Record, body: str, health: ParseHealth | None = None) -> int:
    """Add the `key: value` pairs of `body` to `record`; how many were added. A key that is no field
    name (parsers.values.field_key) is counted in `health.unknown_keys`, never added."""
    added = 0
    for part in body.split(", "):
        key, found, raw = part.partition(": ")
        if not found:
            continue
        name = _NAMES.get(key)
        if name is None:
            name = field_key(key)
            if len(_NAMES) < 4096:
                _NAMES[key] = name
        if name:
            record[name] = field_value(raw)
            added += 1
        elif health is not None:
            health.unknown_keys += 1
    return added


def _rest_after_marker(record: Record, rest: str, health: ParseHealth | None) -> str:
    """Handle `[N]` and `(mixed #running-req: N)` right after the marker; the pair list remains."""
    if rest.startswith(" [") and "]" in rest:
        close = rest.index("]")
        counter = rest[2:close]
        if counter.isascii() and counter.isdigit():
            record["iter"] = int(counter)
            rest = rest[close + 1 :]
    if rest.startswith("(") and ")" in rest:
        close = rest.index(")")
        _body_fields(record, rest[1:close], health)
        rest = rest[close + 1 :]
    return rest.lstrip(".,: ").rstrip(", .\r")


def _inside_a_message(prefix: str) -> bool:
    """The marker stands in quoted text of another message (a logged request's prompt), not where a
    batch line's message starts. Leftovers of a damaged header (`TP0] `) are no such message."""
    message = parse_header(prefix).message
    return "'" in message or '"' in message or is_request_log(message)


def parse_batch(line_no: int, text: str, health: ParseHealth | None = None) -> Record | None:
    """A `decode`/`prefill` record from one line, or None when the line is not a batch line; keys
    that are no field name are counted in `health`."""
    start = _batch_start(text)
    if start is None:
        return None
    index, kind = start
    record: Record = {"kind": kind, "line": line_no}
    if index and _inside_a_message(text[:index]):
        return None
    header = search_header(text[:index]) if index else Header(None, {}, "", False)
    stamp(record, header)
    record["tags"] = header.tags
    rest = text[index + (12 if kind == "decode" else 13) :]
    if _body_fields(record, _rest_after_marker(record, rest, health), health) == 0:
        return None
    return record


def _own_line(text: str) -> str:
    """The server's own `[stamp tags] ...` line inside a docker-stamped, Ray-prefixed or otherwise
    wrapped one, so the shape fast path reads those too. Its stamp is the record's `ts` either way
    (parsers.header)."""
    if text[:1] == "[":
        return text
    rest = peel(text).rest
    if rest[:1] != "[":
        rest = unwrap(rest, 0) or ""
    return rest if rest[:1] == "[" else text


def _capacity(line_no: int, header: Header, message: str, health: ParseHealth) -> Record:
    record = _stamped("capacity", line_no, header)
    record.update(split_pairs(message.rstrip(". "), ", ", "=", health))
    return record


def _kv_cache(line_no: int, header: Header, message: str, health: ParseHealth) -> Record:
    record = _stamped("kv_cache", line_no, header)
    marker = " is allocated." if " is allocated." in message else " VA upper bound."
    cache, _, body = message.partition(marker)
    record["cache"] = cache.strip()
    record.update(split_pairs(body.strip().rstrip("."), health=health))
    return record


def _stamped(kind: str, line_no: int, header: Header) -> Record:
    record: Record = {"kind": kind, "line": line_no}
    stamp(record, header)
    record["tags"] = header.tags
    return record


class SglangParser(TracebackMixin):
    name: ClassVar[str] = "sglang"

    def __init__(self) -> None:
        self.health = ParseHealth()
        self._shapes = BatchShapes()

    def _feed(self, line_no: int, text: str) -> list[Record]:
        text = close_backticks(strip_repeats(strip_ansi(text)))
        if self._block is not None:
            header = parse_header(text)
            done, consumed = self._through_block(header.message, header.found and not header.shipped_only)
            if consumed:
                return done
            return done + self._line(line_no, text, header)
        return self._line(line_no, text, None)

    def _line(self, line_no: int, text: str, header: Header | None) -> list[Record]:
        if " batch" in text:
            start = _batch_start(text)
            if start is not None:
                own = _own_line(text)
                record = self._shapes.parse(start[1], line_no, own)
                if record is not None:
                    add_pool_totals(record)  # a hybrid model's pools: SGLang's own token usage
                    return [record]
        parts = split_joined(text)
        if len(parts) > 1:  # lines pasted into one: each read on its own
            return [record for part in parts for record in self._general(line_no, part, None)]
        return self._general(line_no, text, header)

    def _general(self, line_no: int, text: str, header: Header | None) -> list[Record]:
        if " batch" in text:
            start = _batch_start(text)
            if start is not None:
                record = parse_batch(line_no, text, self.health)
                if record is not None:
                    self._shapes.learn(start[1], _own_line(text))
                    add_pool_totals(record)
                    return [record]
        if is_access_line(text):
            self.health.access += 1
            return []
        return self._message(line_no, header or parse_header(text))

    def _message(self, line_no: int, header: Header) -> list[Record]:
        message = header.message
        if is_request_log(message):
            self.health.ignored += 1
            return []
        if message.startswith("server_args="):
            args = parse_args_dump(message[len("server_args=") :])
            if args is not None:
                record = _stamped("server_args", line_no, header)
                record["args"] = args
                return [record]
        elif "max_total_num_tokens=" in message:  # wherever it stands: a pasted line keeps what precedes
            return [_capacity(line_no, header, message[message.index("max_total_num_tokens=") :], self.health)]
        elif " is allocated. " in message or " VA upper bound. " in message:
            return [_kv_cache(line_no, header, message, self.health)]
        block = open_block(line_no, header.ts, header.tags, message, tz=header.tz)
        if block is not None:
            done = self._flush_block()
            self._block = block
            return done
        event = event_of(message)
        if event is not None:
            return [event_record(line_no, header.ts, header.tags, event, message, header.tz)]
        # A line in SGLang's own format that says nothing we chart is not a parse failure.
        if header.found:
            self.health.ignored += 1
        else:
            self.health.unparsed += 1
        return []

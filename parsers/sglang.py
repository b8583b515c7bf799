"""SGLang server log: Decode/Prefill batch lines (first slice; the parsers issue extends it).

Example: `[2026-02-24 12:49:14 TP0] Decode batch, #running-req: 72, #token: 153179, token usage: 0.96,
cuda graph: True, gen throughput (token/s): 930.63, #queue-req: 79`
"""

from __future__ import annotations

import re
from typing import ClassVar

from parsers.base import ParseHealth, Record

_PREFIX = re.compile(r"\[(?P<date>\d{4}-\d{2}-\d{2} )?(?P<time>\d{2}:\d{2}:\d{2}(?:\.\d+)?)(?P<tags>[^\]]*)\]")
_BATCH = re.compile(r"(?P<kind>Decode|Prefill) batch(?: \[\d+\])?[.,]?\s*(?P<body>.*)$")
_UNIT = re.compile(r"\([^)]*\)")
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_TAG = re.compile(r"([A-Z_]+?)(\d+)")


def field_name(key: str) -> str:
    """`#running-req` -> `running_req`, `gen throughput (token/s)` -> `gen_throughput`."""
    key = _UNIT.sub("", key.strip().lstrip("#")).strip().lower()
    return _NON_ALNUM.sub("_", key).strip("_")


def field_value(raw: str) -> int | float | bool | str:
    raw = raw.strip()
    if raw in ("True", "False"):
        return raw == "True"
    try:
        if raw.endswith("%"):
            return round(float(raw[:-1]) / 100, 10)
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw


def parse_tags(text: str) -> dict[str, int]:
    return {name: int(number) for name, number in _TAG.findall(text)}


class SglangParser:
    name: ClassVar[str] = "sglang"

    def __init__(self) -> None:
        self.health = ParseHealth()

    def feed(self, line_no: int, text: str) -> list[Record]:
        self.health.lines += 1
        batch = _BATCH.search(text)
        if batch is None:
            self.health.unparsed += 1
            return []
        record: Record = {"kind": batch["kind"].lower(), "line": line_no}
        prefix = _PREFIX.search(text, 0, batch.start())
        if prefix is not None:
            date = (prefix["date"] or "").strip()
            record["ts"] = f"{date}T{prefix['time']}" if date else prefix["time"]
            record["tags"] = parse_tags(prefix["tags"])
        else:
            record["tags"] = {}
        for part in batch["body"].split(", "):
            key, sep, value = part.partition(": ")
            if sep:
                record[field_name(key)] = field_value(value)
        self.health.records += 1
        return [record]

    def flush(self) -> list[Record]:
        return []

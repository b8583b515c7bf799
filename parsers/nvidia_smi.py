"""nvidia-smi CSV -> `gpu` records.

The GPU collector's query is headerless, in this column order:
`nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total,power.draw,
temperature.gpu --format=csv,noheader,nounits -lms 1000`. nvidia-smi's own header line
(`timestamp, index, utilization.gpu [%], memory.used [MiB], ...`) sets the columns for the lines that
follow. Units are stripped (`100 %` -> 100), `[N/A]`/`[Not Supported]` cells are left out, the stamp
`2026/12/02 14:53:08.174` becomes `ts` `2026-12-02T14:53:08.174`.

A GPU that fell off the bus or needs a reset (XID 79, 48, ...) reads `[GPU requires reset]` or
`[GPU is lost]` in its cells, and nvidia-smi may print `Unable to determine the device handle for GPU
0000:3B:00.0: Unknown Error` instead of its row. Such a cell is never a value (left out like
`[N/A]`); the fault becomes an `error` event, once when it appears (not every sample), again only
after the GPU read normally in between.
"""

from __future__ import annotations

import math
import re
from typing import ClassVar

from kvwatch.parsers.base import ParseHealth, Record
from kvwatch.parsers.values import Value, field_name, field_value

COLLECTOR_COLUMNS = (
    "timestamp", "index", "utilization.gpu", "memory.used", "memory.total", "power.draw", "temperature.gpu",
)  # fmt: skip
_KNOWN = {
    "timestamp": "ts",
    "index": "gpu",
    "utilization.gpu": "util_pct",
    "memory.used": "mem_used_mib",
    "memory.total": "mem_total_mib",
    "power.draw": "power_w",
    "temperature.gpu": "temp_c",
}
_STAMP = re.compile(r"(\d{4})/(\d{2})/(\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)")
_HEADER_CELL = re.compile(r"[a-z][a-z_.]*(?: \[[^\]]*\])?")
_MISSING = ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]", "")
_LOST_GPU = "Unable to determine the device handle for GPU"
# What a GPU can report; a value outside (a garbled 1e308 % or 1e23 °C, index -1) is left out of the
# record and counted unparsed, so no chart's axis or alert reads it.
_RANGES: dict[str, tuple[float, float]] = {
    "gpu": (0, 1023), "util_pct": (0, 100), "mem_used_mib": (0, 16 << 20), "mem_total_mib": (0, 16 << 20),
    "power_w": (0, 10_000), "temp_c": (-40, 200),
}


def _column_name(cell: str) -> str:
    query = cell.split(" [", 1)[0].strip()
    return _KNOWN.get(query) or field_name(query)


def _cell_value(cell: str) -> Value:
    """`100 %` -> 100, `39287 MiB` -> 39287: nvidia-smi's units go, percent stays a percent."""
    if cell.isascii() and cell.replace(".", "", 1).isdigit():  # the collector's own `97`, `687.74`
        if cell.isdigit():
            return int(cell)
        if math.isfinite(as_float := float(cell)):
            return as_float
    number, _, unit = cell.partition(" ")
    value = field_value(number) if unit and " " not in unit else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return field_value(cell)


def _in_range(name: str, value: Value) -> bool:
    bounds = _RANGES.get(name)
    if bounds is None:
        return True
    if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
        return False
    return bounds[0] <= value <= bounds[1]


def _is_header(cells: list[str]) -> bool:
    return all(_HEADER_CELL.fullmatch(cell) for cell in cells)


class NvidiaSmiParser:
    name: ClassVar[str] = "nvidia-smi"

    def __init__(self) -> None:
        self.health = ParseHealth()
        self.columns: tuple[str, ...] = tuple(_column_name(c) for c in COLLECTOR_COLUMNS)
        self._faults: dict[object, str] = {}  # GPU (index, or the device's bus id) -> the fault said last

    def feed(self, line_no: int, text: str) -> list[Record]:
        self.health.lines += 1
        cells = [cell.strip() for cell in text.split(",")]
        if _is_header(cells):
            self.columns = tuple(_column_name(cell) for cell in cells)
            return []
        if text.startswith(_LOST_GPU):  # `... for GPU 0000:3B:00.0: Unknown Error`: the bus id names it
            device = text[len(_LOST_GPU):].rsplit(": ", 1)[0].strip()
            return self._counted(self._fault(line_no, None, device, text.strip()))
        status: list[str] = []
        try:
            record = self._row(line_no, cells, status)
        except Exception:  # never raise: one odd line must not stop the stream
            record = None
        if record is None:
            self.health.unparsed += 1
            return []
        gpu = record["gpu"]
        if not status:
            self._faults.pop(gpu, None)
            return self._counted([record])
        kept = [record] if set(record) - {"kind", "line", "ts", "gpu"} else []  # some cells still read
        return self._counted(kept + self._fault(line_no, record.get("ts"), gpu, f"GPU {gpu}: {status[0].strip('[]')}"))

    def flush(self) -> list[Record]:
        return []

    def _counted(self, records: list[Record]) -> list[Record]:
        if records:
            self.health.records += len(records)
        else:  # a fault said again: a well-formed line with nothing new
            self.health.ignored += 1
        return records

    def _fault(self, line_no: int, ts: object, gpu: object, message: str) -> list[Record]:
        """An `error` event for a GPU fault, unless this GPU said the same last time."""
        if self._faults.get(gpu) == message:
            return []
        self._faults[gpu] = message
        record: Record = {"kind": "event", "line": line_no}
        if isinstance(ts, str):
            record["ts"] = ts
        record.update({"tags": {}, "event": "error", "message": message})
        return [record]

    def _row(self, line_no: int, cells: list[str], status: list[str]) -> Record | None:
        """The row's record; a cell in brackets that is not a known gap goes to `status`, not the record."""
        if len(cells) != len(self.columns):
            return None
        record: Record = {"kind": "gpu", "line": line_no}
        for name, cell in zip(self.columns, cells, strict=True):
            if cell in _MISSING:
                continue
            if cell.startswith("[") and cell.endswith("]"):
                status.append(cell)
                continue
            if name == "ts":
                stamp = _STAMP.fullmatch(cell)
                if stamp is None:
                    return None
                record["ts"] = f"{stamp[1]}-{stamp[2]}-{stamp[3]}T{stamp[4]}"
            else:
                value = _cell_value(cell)
                if not _in_range(name, value):
                    self.health.unparsed += name != "gpu"  # a bad index makes the whole row unparsed
                    continue
                record[name] = value
        return record if isinstance(record.get("gpu"), int) else None

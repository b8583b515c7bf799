"""Parsers: pure functions from log lines to records, one stream parser per source.

`create_parser(source)` gives a fresh parser for one stream (one file, in order); `PARSERS` maps
source names to classes: sglang, vllm, nvidia-smi, prometheus, client, outputs, and auto (sniffs
SGLang vs vLLM, or any of the others, from the first lines and delegates).

Contract (see parsers.base): `feed(line_no, text) -> list[Record]`, `flush() -> list[Record]`,
`health` (lines, records, unparsed, access, ignored, unknown_keys). Parsers never raise, do no I/O, and keep state only
for their own stream. Records follow docs/records.md; beyond it:
- `server_args` records carry the startup flags as a dict in `args` (Python attribute names);
- `event` records carry `message`, and for tracebacks `exception` and the whole `traceback`;
- prometheus scrapes give `stats` records with `source: "prometheus"` and `labels`;
- a decode/prefill `[N]` counter is `iter`;
- `tz` (`+HH:MM`) when the stamp `ts` came from carries a zone (Dynamo, docker `--timestamps`);
  `ts` stays the wall time as written;
- a logged `nan` / `nan%` is None (JSON null), never a number or a string.

Choices the pipeline must know:
- HTTP access lines (uvicorn) are recognised and only counted, in `health.access`; they give no
  record, so nothing has to filter them out of the samples.
- Records come out in the order they are complete, not always in line order: a traceback is one
  `event` that comes out when the line after it arrives (other ranks' lines written in between come
  out first), or at flush(). For log sources call flush() at the end of a stream, or after the tail
  has been idle a while, so a trailing traceback is not held back.
- `outputs` reports its running count only at flush(): call flush() after each batch you feed.
- `prometheus` closes a scrape at flush(): feed one scrape's lines, then flush().
- `health.sample` / `health.sample_line`: the first unparsed line, to show with the count.
- Timestamps: `ts` is ISO-8601 without zone as logged; `parsers.timestamps.to_epoch(ts, day)` turns
  it into epoch seconds (UTC), taking the missing date of time-only and year-less stamps from `day`.

Speed: SglangParser learns the few line shapes a log repeats (parsers.shapes) and reads them with one
regex; `kvwatch parse` to CSV/Parquet reads whole blocks column-wise (parsers.columnar) and builds
Arrow tables (parsers.tables). Both give exactly the records of the line-by-line path (tested).
"""

from __future__ import annotations

from typing import Any

from kvwatch.parsers.auto import AutoParser
from kvwatch.parsers.base import LineParser, ParseHealth, Record
from kvwatch.parsers.client import ClientParser
from kvwatch.parsers.nvidia_smi import NvidiaSmiParser
from kvwatch.parsers.outputs import OutputsParser
from kvwatch.parsers.prometheus import PrometheusParser
from kvwatch.parsers.sglang import SglangParser
from kvwatch.parsers.vllm import VllmParser

PARSERS: dict[str, type[Any]] = {
    cls.name: cls
    for cls in (
        SglangParser,
        VllmParser,
        NvidiaSmiParser,
        PrometheusParser,
        ClientParser,
        OutputsParser,
        AutoParser,
    )
}
SOURCES: tuple[str, ...] = tuple(PARSERS)


def create_parser(source: str, **options: str) -> LineParser:
    """A fresh parser for one stream of `source` (a key of PARSERS).

    `options` go to parsers that take them: `file` for outputs (named in its records).
    Raises KeyError for an unknown source.
    """
    if source == "auto":
        return AutoParser(lambda chosen: create_parser(chosen, **options))
    cls = PARSERS[source]
    if source == "outputs":
        return cls(**options)  # type: ignore[no-any-return]
    return cls()  # type: ignore[no-any-return]


__all__ = ["PARSERS", "SOURCES", "LineParser", "ParseHealth", "Record", "create_parser"]

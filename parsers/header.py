"""The prefix in front of a log message: timestamp, zone and rank tags.

Handled shapes (a message with no prefix is fine too):
- in front of everything, what launchers and shippers add (parsers.prefixes): an RFC 3339 stamp
  (docker/kubectl `--timestamps`, NVIDIA Dynamo), Ray/vLLM process prefixes `(APIServer pid=3646) `;
- SGLang `[2026-02-24 12:49:14 TP0] `, `[2026-02-24 12:49:14.123 PP0 ATTN_CP0 TP0 EP0] `, old
  `[04:40:55 TP0] `, untagged `[2025-05-14 09:31:43] `, custom `[2025-06-06 20:31:47][scheduler.py:123][INFO]: `;
- rank tags alone behind a shipper's stamp: `2026-06-23T15:16:14Z [PP1 ATTN_CP0 TP0] `;
- Python logging layouts: `2025-10-29 02:27:35 INFO 8900 [ DP15 TP15 EP15 file.py:222] `,
  `2025-06-06 20:31:47,123 [INFO] sglang.srt.managers.scheduler: `, `... INFO logger: `,
  `... - INFO - logger: `, and behind a shipper's stamp `INFO scheduler_metrics_mixin.report_prefill_stats: `;
- vLLM `INFO 01-22 18:27:20 [metrics.py:449] `, `... metrics.py:449] `, `... [v1/metrics/loggers.py:271] `.

`ts` is the server's own stamp when it has one, else the shipper's (then `shipped_only` when no
layout of the server's own follows: a traceback's continuation line behind `docker logs -t`).
`tz` is set only when the stamp used carries a zone (`+00:00` for `Z`). A logger name is taken off
only after a level, so a message that starts with `word: ` keeps it.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from kvwatch.parsers.prefixes import peel, strip_process, unwrap
from kvwatch.parsers.timestamps import iso

__all__ = ["Header", "parse_header", "parse_tags", "search_header", "stamp", "strip_process"]

_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
_CLOCK = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]{1,6})?"
_BRACKET = re.compile(
    rf"\[(?:([0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}) )?({_CLOCK})((?: +[^\]\s]+)*) *\](?:\[[^\]\s]*\])*(?::(?= ))? ?"
)
_TAGS_ONLY = re.compile(r"\[((?:[A-Z][A-Z_]*[0-9]{1,6} ?)+)\] ?")
# After the stamp: level (`INFO`, `[INFO]`, `- INFO -`), pid, a `[...]` of tags and file, logger name.
_LAYOUT = rf"(?: +-)?(?: +\[?({_LEVEL})\]?)?(?: +-)?(?: +[0-9]+)?(?: +\[([^\]]*)\])?(?: +([A-Za-z_][\w.<>-]*):(?= ))? ?"
_DICTCONFIG = re.compile(rf"([0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}) ({_CLOCK})" + _LAYOUT)
_LEVEL_FIRST = re.compile(
    rf" *\[?({_LEVEL})\]?(?= )(?: +-)?(?: +[0-9]+)?(?: +\[([^\]]*)\])?(?: +([A-Za-z_][\w.<>-]*):(?= ))? ?"
)
_VLLM = re.compile(rf"{_LEVEL} ([0-9]{{2}}-[0-9]{{2}}) ({_CLOCK}) \[?[\w./-]+:[0-9]+\] ?")
_LOOSE = re.compile(rf"(?:([0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}) )?({_CLOCK})([^\]\[]*)\]?\s*$")
_TAG = re.compile(r"([A-Z][A-Z_]*)([0-9]{1,6})")
_TAG_CACHE: dict[str, dict[str, int]] = {}
# A logging layout's message that starts like this is a wrapper's end (`2025-05-30 09:55:29.284 | INFO
# 05-30 07:55:29 [loggers.py:116] ...`): the engine's header may follow.
_WRAPPER_ENDS = frozenset("|>`")
_UVICORN = ("INFO:  ", "WARNING:  ", "ERROR:  ")


class Header(NamedTuple):
    ts: str | None
    tags: dict[str, int]
    message: str
    found: bool
    tz: str | None = None
    # Only a shipper's stamp, no layout of the server's own: for tracebacks the line is unprefixed.
    shipped_only: bool = False


def stamp(record: dict[str, Any], header: Header) -> None:
    """Put the header's `ts` (and `tz`, when its stamp had a zone) on a record."""
    if header.ts is not None:
        record["ts"] = header.ts
    if header.tz is not None:
        record["tz"] = header.tz


def parse_tags(text: str) -> dict[str, int]:
    """`DP3 TP3 EP3` -> {"DP": 3, "TP": 3, "EP": 3}; tokens of other shapes are ignored."""
    cached = _TAG_CACHE.get(text)
    if cached is None:
        cached = {}
        for token in text.split():
            match = _TAG.fullmatch(token)
            if match is not None:
                cached[match[1]] = int(match[2])
        if len(_TAG_CACHE) < 1024:
            _TAG_CACHE[text] = cached
    return dict(cached)


def _layout(match: re.Match[str], text: str, level: int, bracket: int, name: int) -> str:
    """The message after a logging layout; a logger name counts only after a level and no `[...]`."""
    if match[name] is not None and (match[level] is None or match[bracket] is not None):
        return text[match.start(name) :]
    return text[match.end() :]


def parse_header(text: str) -> Header:
    """Split one line into timestamp, rank tags and message; `found` is False without a prefix.
    Behind a wrapper (parsers.prefixes) the engine's own header is found where it stands."""
    header = _parse(text)
    if header.found and not header.shipped_only and header.message[:1] not in _WRAPPER_ENDS:
        return header  # the engine's header first on the line: almost every line
    if not header.found and header.message.startswith(_UVICORN):
        return header  # uvicorn's own lines (access, startup) carry no engine header to look for
    inner_text = unwrap(header.message, 0 if header.found else 1)
    if inner_text is None:
        return header
    inner = _parse(inner_text)
    if not inner.found or inner.shipped_only:
        return header
    if inner.ts is None and header.ts is not None:  # a wrapper's stamp only when the engine has none
        return inner._replace(ts=header.ts, tz=header.tz)
    return inner


def _parse(text: str) -> Header:
    outer_ts, outer_tz, text = peel(text)
    first = text[:1]
    if first == "[":
        match = _BRACKET.match(text)
        if match is not None:
            tags = parse_tags(match[3]) if match[3] else {}
            return Header(iso(match[1], match[2]), tags, text[match.end() :], True)
        match = _TAGS_ONLY.match(text) if outer_ts is not None else None
        if match is not None:
            return Header(outer_ts, parse_tags(match[1]), text[match.end() :], True, outer_tz)
    elif first.isdigit():
        match = _DICTCONFIG.match(text)
        if match is not None:
            tags = parse_tags(match[4]) if match[4] else {}
            return Header(iso(match[1], match[2]), tags, _layout(match, text, 3, 4, 5), True)
    else:
        match = _VLLM.match(text)
        if match is not None:
            return Header(iso(match[1], match[2]), {}, text[match.end() :], True)
        match = _LEVEL_FIRST.match(text) if outer_ts is not None else None
        if match is not None:
            tags = parse_tags(match[2]) if match[2] else {}
            return Header(outer_ts, tags, _layout(match, text, 1, 2, 3), True, outer_tz)
    if outer_ts is not None:
        return Header(outer_ts, {}, text, True, outer_tz, shipped_only=True)
    return Header(None, {}, text, False)


def search_header(prefix: str) -> Header:
    """Header of a batch line whose prefix may carry junk (a tqdm bar, a missing `[`)."""
    header = parse_header(prefix)
    if header.found and not header.message.strip():
        return header
    # Only the tail: a timestamp belongs right before the message, and a bounded search stays linear.
    stamp_match = _LOOSE.search(prefix[-160:])
    if stamp_match is None:
        return Header(None, {}, prefix, False)
    return Header(iso(stamp_match[1], stamp_match[2]), parse_tags(stamp_match[3]), "", True)

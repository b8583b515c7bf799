"""What launchers and log shippers put around a server's own line, peeled off before it is read.

In front (in this order, each optional):
- a shipper's stamp in RFC 3339 form: docker/kubectl `--timestamps`
  (`2025-06-06T20:31:47.123456789Z [2025-06-06 20:31:47] Decode batch, ...`), NVIDIA Dynamo's
  re-formatted lines (`2026-07-08T22:28:50.274739Z  INFO scheduler_metrics_mixin.report_prefill_stats:
  Prefill batch, ...`), a log export's `1779264164496<TAB>2026-05-20T08:02:44.496Z<TAB>`;
- process prefixes, any number of them: vLLM/Ray `(APIServer pid=3646) `,
  `(RayWorkerWrapper pid=123, ip=10.0.0.1) `, `(pid=632, ip=10.244.1.107) `, an actor inside an
  actor `(EngineCore_DP0 pid=846) (RayWorkerWrapper pid=1027) `.
Behind: Ray's dedup note ` [repeated 7x across cluster]` (also in ANSI colour, and with its
`(Ray deduplicates logs by default. ...)` explanation), which would otherwise glue onto the last value.

The shipper's stamp is only the line's time when the server's own line has none: the server's stamp
is the one "as logged" (docs/records.md), in the same clock as the rest of its log.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Where the engine's own line starts inside whatever wraps it.
#
# Instead of a list of wrappers, the engine's header is searched for in the first WRAPPER_SPAN
# characters: SGLang's `[date time TAGS]` (or `[time TAGS]`), vLLM's `LEVEL MM-DD HH:MM:SS `, an
# RFC 3339 or Python-logging stamp, a Ray/vLLM process prefix `(Name pid=N)` (its name may nest
# parentheses two levels deep). What stands before it is a wrapper: docker compose `vllm-1  | `,
# journald `Apr 05 18:07:38 host bash[59857]: `, kubectl `--prefix` `[pod/name/container] `, Slurm
# `srun -l` `0: `, a Markdown `> ` or a backtick. It is only provenance: never a field, never a time
# (the engine's own stamp is the line's; parsers.header keeps a shipper's stamp only without one).
#
# A wrapper never holds a quote: a stamp inside quoted text is part of another message (a logged
# prompt), not the start of the engine's line.

WRAPPER_SPAN = 160
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_CLOCK = r"[0-9]{2}:[0-9]{2}:[0-9]{2}"
_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
# Two levels of parentheses inside the process prefix: `(RayWorkerWrapper(rank=(0, 1)) pid=7)`.
# The alternatives inside are disjoint (a parenthesis or not), so the match stays linear.
PROCESS_NAME = r"[\w.:-]+(?:\((?:[^()]|\([^()]*\))*\))?"
_ENGINE = re.compile(
    rf"\[(?:{_DATE} )?{_CLOCK}[ .,\]]"  # SGLang
    rf"|{_LEVEL} [0-9]{{2}}-[0-9]{{2}} {_CLOCK}[ .,]"  # vLLM
    rf"|{_DATE}[T ]{_CLOCK}"  # RFC 3339 (Dynamo, docker) or Python logging
    rf"|\((?:{PROCESS_NAME} )?pid=[0-9]+"  # Ray / vLLM process prefix
)


def engine_start(text: str, start: int = 1) -> int:
    """Where the engine's header starts behind a wrapper (at or after `start`), or -1."""
    match = _ENGINE.search(text, start, WRAPPER_SPAN)
    if match is None:
        return -1
    wrapper = text[: match.start()]
    if "'" in wrapper or '"' in wrapper:
        return -1
    return match.start()


def unwrap(text: str, start: int = 1) -> str | None:
    """The engine's line behind a wrapper, or None when none is found."""
    index = engine_start(text, start)
    return text[index:] if index >= 0 else None


def close_backticks(text: str) -> str:
    """A line quoted as Markdown inline code: the closing backtick is taken off the end (the opening
    one is a wrapper), so it never sticks to the last value."""
    if text.endswith("`") and "`" in text[: min(len(text) - 1, WRAPPER_SPAN)]:
        return text[:-1].rstrip()
    return text


_STAMP = re.compile(
    r"(?:[0-9]{10,13}\t)?([0-9]{4}-[0-9]{2}-[0-9]{2})T([0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.,]([0-9]{1,9}))?"
    r"(Z|[+-][0-9]{2}:?[0-9]{2})?[ \t]"  # one separator: a traceback's indentation behind it is kept
)
# Parentheses inside, two levels deep (`(Worker(rank=(0, 1)) pid=7)`, a Ray actor's name), written so
# it cannot backtrack badly.
_PROCESS = re.compile(rf"\((?:{PROCESS_NAME} )?pid=[0-9]+[^()]*(?:\([^()]*\)[^()]*)*\) ?")
_REPEATED = re.compile(
    r"(?:\x1b\[[0-9;]*m)? ?\[repeated [0-9]+x across cluster\](?:\x1b\[[0-9;]*m)?(?: \(Ray deduplicates[^)]*\))?\s*$"
)
MAX_PROCESS_PREFIXES = 4


class Outer(NamedTuple):
    """The shipper's stamp (`ts` as ISO-8601 without zone, `tz` as `+HH:MM`) and the line behind it."""

    ts: str | None
    tz: str | None
    rest: str


def zone(text: str | None) -> str | None:
    """`Z` -> `+00:00`, `+0200` -> `+02:00`; None stays None."""
    if not text:
        return None
    if text == "Z":
        return "+00:00"
    return text if ":" in text else f"{text[:3]}:{text[3:]}"


def strip_process(text: str) -> str:
    """Drop the `(Name pid=N) ` prefixes Ray and vLLM put in front of a line."""
    for _ in range(MAX_PROCESS_PREFIXES):
        if not text.startswith("("):
            break
        match = _PROCESS.match(text)
        if match is None:
            break
        text = text[match.end() :]
    return text


def strip_repeats(text: str) -> str:
    """Drop Ray's trailing ` [repeated Nx across cluster]` note."""
    # Cheap tests first: almost no line ends like the note, so most lines cost one endswith.
    if not text.endswith(("]", ")", "m", " ")) or "across cluster]" not in text:
        return text
    match = _REPEATED.search(text)
    return text[: match.start()] if match is not None else text


def peel(text: str) -> Outer:
    """The shipper's stamp and process prefixes in front of `text`, and what is left."""
    ts = tz = None
    if text[:1].isdigit():
        stamp = _STAMP.match(text)
        if stamp is not None:
            # Nanoseconds (docker) are cut to microseconds: what Python and Arrow timestamps hold.
            fraction = f".{stamp[3][:6]}" if stamp[3] else ""
            ts, tz = f"{stamp[1]}T{stamp[2]}{fraction}", zone(stamp[4])
            text = text[stamp.end() :]
    if text.startswith("("):
        text = strip_process(text)
    return Outer(ts, tz, text)


# CSI (`\x1b[32m`, `\x1b[0K`) and OSC (`\x1b]...\x07`) sequences: colour a terminal logger or a
# shipper puts around the stamp or the level; they are removed before anything is read.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """`text` without terminal escape sequences (a plain line is returned as it is, cheaply)."""
    return _ANSI.sub("", text) if "\x1b" in text else text

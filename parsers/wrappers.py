"""Where the engine's own line starts inside whatever wraps it.

Instead of a list of wrappers, the engine's header is searched for in the first WRAPPER_SPAN
characters: SGLang's `[date time TAGS]` (or `[time TAGS]`), vLLM's `LEVEL MM-DD HH:MM:SS `, an
RFC 3339 or Python-logging stamp, a Ray/vLLM process prefix `(Name pid=N)` (its name may nest
parentheses two levels deep). What stands before it is a wrapper: docker compose `vllm-1  | `,
journald `Apr 05 18:07:38 host bash[59857]: `, kubectl `--prefix` `[pod/name/container] `, Slurm
`srun -l` `0: `, a Markdown `> ` or a backtick. It is only provenance: never a field, never a time
(the engine's own stamp is the line's; parsers.header keeps a shipper's stamp only without one).

A wrapper never holds a quote: a stamp inside quoted text is part of another message (a logged
prompt), not the start of the engine's line.
"""

from __future__ import annotations

import re

WRAPPER_SPAN = 160
_STAMP = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_CLOCK = r"[0-9]{2}:[0-9]{2}:[0-9]{2}"
_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
# Two levels of parentheses inside the process prefix: `(RayWorkerWrapper(rank=(0, 1)) pid=7)`.
# The alternatives inside are disjoint (a parenthesis or not), so the match stays linear.
PROCESS_NAME = r"[\w.:-]+(?:\((?:[^()]|\([^()]*\))*\))?"
_ENGINE = re.compile(
    rf"\[(?:{_STAMP} )?{_CLOCK}[ .,\]]"  # SGLang
    rf"|{_LEVEL} [0-9]{{2}}-[0-9]{{2}} {_CLOCK}[ .,]"  # vLLM
    rf"|{_STAMP}[T ]{_CLOCK}"  # RFC 3339 (Dynamo, docker) or Python logging
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

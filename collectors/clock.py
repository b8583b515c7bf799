"""Read a host's clock and its files' mtimes over the transport (the I/O half; logic in clock_infer).

`probe_host` runs one exec: `$TZ`, the /etc/localtime link and `date "+%z %Z %s.%N"`, bracketed by
kvwatch's clock, so offset, zone name and skew come from the same moment. `probe_files` gives each
file's mtime (host clock), size and its last lines (the newest stamp says the writer's zone, see
`clock_infer.infer_file_offset`). Failures give None / leave a file out: collection goes on with
what is known; the host's clock is then reported `unknown` with the reason (`ClockUnread`), and
each file's zone comes from its own stamps and mtime.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from kvwatch.collectors.base import CollectorError, Transport
from kvwatch.collectors.clock_infer import HostClock, parse_host_probe

log = logging.getLogger(__name__)
PROBE_SCRIPT = 'printf "%s\\n" "${TZ-}"; readlink /etc/localtime 2>/dev/null || echo; date "+%z %Z %s.%N"'
# `stat -L` follows a symlinked log; a missing file prints "-" so answers stay in order.
MTIME_SCRIPT = 'for p; do LC_ALL=C stat -L -c "%Y %s" -- "$p" 2>/dev/null || echo "- -"; done'
NEWEST_BYTES = 8192  # the last lines of a file: enough for a few stamped lines and a traceback


@dataclass(frozen=True, slots=True)
class FileProbe:
    mtime: float  # host clock, epoch seconds
    size: int
    newest_lines: tuple[str, ...]  # complete lines at the end of the file, oldest first


@dataclass(frozen=True, slots=True)
class ClockUnread:
    """The host's clock could not be read: its zone and skew are unknown (not assumed UTC)."""

    reason: str


def probe_host(transport: Transport, timeout: float = 10.0) -> HostClock | ClockUnread:
    sent = time.time()
    try:
        result = transport.run(["sh", "-c", PROBE_SCRIPT], timeout=timeout)
    except CollectorError as exc:
        log.warning("%s: reading the host's clock failed: %s", transport.name, exc)
        return ClockUnread(f"reading the host's clock failed: {exc}")
    received = time.time()
    clock = parse_host_probe(result.stdout.decode(errors="replace"), sent, received)
    if clock is None:
        log.warning("%s: the host's `date` answer is not understood: %r", transport.name, result.stdout[:200])
        return ClockUnread(f"the host's `date` answer is not understood: {result.stdout[:120]!r}")
    return clock


def probe_files(transport: Transport, paths: list[str], lines_of: frozenset[str] | None = None,
                timeout: float = 10.0) -> dict[str, FileProbe]:
    """mtime, size and the last lines of each existing path (only of those in `lines_of`, when
    given: output files need no stamps); missing ones left out."""
    if not paths:
        return {}
    try:
        result = transport.run(["sh", "-c", MTIME_SCRIPT, "sh", *paths], timeout=timeout)
    except CollectorError as exc:
        log.warning("%s: reading file mtimes failed: %s", transport.name, exc)
        return {}
    answers = result.stdout.decode(errors="replace").splitlines()
    out: dict[str, FileProbe] = {}
    for path, answer in zip(paths, answers, strict=False):
        fields = answer.split()
        if len(fields) != 2 or not fields[0].isdigit() or not fields[1].isdigit():
            continue
        size = int(fields[1])
        lines = _newest_lines(transport, path, size) if lines_of is None or path in lines_of else ()
        out[path] = FileProbe(float(fields[0]), size, lines)
    return out


def _newest_lines(transport: Transport, path: str, size: int) -> tuple[str, ...]:
    start = max(0, size - NEWEST_BYTES)
    try:
        data = transport.read(path, start, size - start)
    except CollectorError:
        return ()
    if start > 0:  # the first piece is the end of an older line
        data = data.partition(b"\n")[2]
    complete = data[: data.rfind(b"\n") + 1]
    return tuple(complete.decode(errors="replace").splitlines())

"""Client log: tqdm progress -> `progress` (`done`, `total`, and `desc`/`rate` when shown), nothing else.

A client prints what the model wrote and what its users sent: a response that reads `CUDA out of
memory` or `Scheduler hit an exception` is no server event, so no line of a client log becomes an
event (its tracebacks and phrases are counted as ignored). The server log says what the server did.

tqdm redraws with `\\r`, so one logged line may hold many redraws: the last one counts.
`B2: 45%|████▌     | 1604/3500 [12:34<15:00,  2.10it/s]` -> done 1604, total 3500, desc `B2`,
rate 2.1. A bare `3/4` in prose is not progress: the bar or the `[elapsed<left]` part must be there.
"""

from __future__ import annotations

import re
from typing import ClassVar

from kvwatch.parsers.base import ParseHealth, Record
from kvwatch.parsers.events import TracebackMixin
from kvwatch.parsers.header import parse_header
from kvwatch.parsers.prefixes import strip_ansi
from kvwatch.parsers.values import field_value

_PROGRESS = re.compile(
    r"(?:(?P<pct>\d{1,3})%\|[^|\r\n]{0,200}\| *(?P<done>\d+)/(?P<total>\d+)"
    r"|(?P<done2>\d+)/(?P<total2>\d+) \[\d[\d:]*<)"
)
_LOG_LEVEL = re.compile(r"^[-: ]*(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\b[-: ]*")
_RATE = re.compile(r"([\d.]+)(it|s)/(s|it)\]")


def _progress(line_no: int, text: str) -> Record | None:
    for segment in reversed(text.split("\r")):
        match = _PROGRESS.search(segment[-4096:])
        if match is None:
            continue
        done, total = (match["done"], match["total"]) if match["done"] else (match["done2"], match["total2"])
        record: Record = {"kind": "progress", "line": line_no, "done": int(done), "total": int(total)}
        desc = segment[: match.start()].strip().rstrip(":").strip()
        header = parse_header(desc)
        if header.ts is not None:
            record["ts"] = header.ts
            desc = _LOG_LEVEL.sub("", header.message).strip().rstrip(":").strip()
        if desc:
            record["desc"] = desc[-200:]
        rate = _RATE.search(segment, match.end())
        rate_value = field_value(rate[1]) if rate is not None and rate[2] == "it" else None
        if isinstance(rate_value, int | float) and not isinstance(rate_value, bool):
            record["rate"] = float(rate_value)
        return record
    return None


class ClientParser(TracebackMixin):
    name: ClassVar[str] = "client"

    def __init__(self) -> None:
        self.health = ParseHealth()

    def _feed(self, line_no: int, text: str) -> list[Record]:
        text = strip_ansi(text)
        if "/" in text:
            record = _progress(line_no, text)
            if record is not None:
                return [record]
        # A client prints whatever it likes: a line that is no progress bar is just text.
        self.health.ignored += 1
        return []

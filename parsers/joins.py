"""Two engine lines pasted into one text line (a newline lost in a copy): each is read.

A second engine line starts at a full stamp (`[2026-02-24 12:49:14`, ` INFO 01-25 11:26:58 `), or a
process prefix in front of one (` (APIServer pid=7) INFO 01-25 ...`), that follows a first line with a
message of its own. Headers
and wrappers in front of one line (a docker stamp before SGLang's, `vllm-1  | ` before vLLM's) are not
a join: what precedes them has no message. A header inside quoted text (a logged prompt) is not a join.
"""

from __future__ import annotations

import re

from kvwatch.parsers.header import parse_header
from kvwatch.parsers.prefixes import PROCESS_NAME

_LEVEL = "(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
_JOINED = re.compile(
    r"\[[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"
    rf"|(?<= ){_LEVEL} [0-9]{{2}}-[0-9]{{2}} [0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}} "
    rf"|(?<= )\((?:{PROCESS_NAME} )?pid=[0-9]+[^()]*\) (?={_LEVEL} [0-9]{{2}}-|\[[0-9]{{4}}-)"
)
_JUNK = " |>`:-,."


def split_joined(text: str, start: int = 1) -> list[str]:
    """The engine lines in `text`: one, or more when lines were pasted together. `start`: where the
    first line's message starts, when known (a second line can only start after it)."""
    find = text.find  # almost every line: six substring scans of its message, no regex
    if (find("[2", start) < 0 and find(" (", start) < 0 and find(" INFO ", start) < 0
            and find(" WARNING ", start) < 0 and find(" ERROR ", start) < 0 and find(" DEBUG ", start) < 0):
        return [text]
    parts: list[str] = []
    begin = 0
    for match in _JOINED.finditer(text, max(start, 1)):
        before = text[begin : match.start()]
        if "'" in before or '"' in before:
            break
        header = parse_header(before)
        if not header.found or header.shipped_only or not header.message.strip(_JUNK):
            continue  # wrappers and headers of one line, not a line of its own
        parts.append(before.rstrip())
        begin = match.start()
    parts.append(text[begin:])
    return parts

"""One function between what a log said and a terminal: control characters made visible.

A flag value, an output folder's name or an error text comes from the monitored host. Printed as it
is, `\\x1b]0;...\\x07` sets the terminal's title, `\\x1b[2J` clears the screen, `\\x1b]52;c;...` writes
the clipboard, and a newline or `\\r` forges a line of the status. Every value the text commands
print goes through `neutralised` (data) or `neutral_text` (a finished text whose own newlines stay).
"""

from __future__ import annotations

import re
from typing import Any

# C0 and C1 controls, DEL, and the Unicode line separators and bidirectional overrides.
_OTHERS = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ANY_CONTROL = re.compile("[\x00-\x1f" + _OTHERS + "]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f" + _OTHERS + "]")  # tab and newline stay


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutral_text(text: str, keep_lines: bool = True) -> str:
    """`text` with every control character shown as an escape (newlines and tabs kept by default)."""
    return (_CONTROL_BUT_LINES if keep_lines else _ANY_CONTROL).sub(_visible, text)


def neutralised(value: Any) -> Any:
    """A copy of an API answer whose every string (keys too) has no control character left."""
    if isinstance(value, str):
        return neutral_text(value, keep_lines=False)
    if isinstance(value, dict):
        return {neutralised(k) if isinstance(k, str) else k: neutralised(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [neutralised(item) for item in value]
    return value

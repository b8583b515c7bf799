"""The prefix in front of a log message: timestamp and rank tags.

Handled shapes (all searched tolerantly, a message with no prefix is fine too):
- a process prefix first: Ray `(SGLangEngine pid=41820) `, vLLM `(APIServer pid=3646) `;
- SGLang `[2026-02-24 12:49:14 TP0] `, `[2026-02-24 12:49:14.123 DP3 TP3 EP3] `, old `[04:40:55 TP0] `,
  untagged `[2025-05-14 09:31:43] `;
- dictConfig formats `2025-10-29 02:27:35 INFO 8900 [ DP15 TP15 EP15 file.py:222] `;
- vLLM `INFO 01-22 18:27:20 [metrics.py:449] ` / `INFO 01-22 18:27:20 metrics.py:449] `.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from kvwatch.parsers.timestamps import iso

_PROCESS = re.compile(r"\(\w[\w.-]* pid=\d+(?:, ip=[^)]*)?\) ?")
_BRACKET = re.compile(r"\[(?:(\d{4}-\d{2}-\d{2}) )?(\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?)((?: +[^\]\s]+)*) *\] ?")
_DICTCONFIG = re.compile(
    r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?)(?: +[A-Z]+)?(?: +\d+)?(?: +\[([^\]]*)\])? ?"
)
_VLLM = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?)"
    r" \[?[\w.-]+:\d+\] ?"
)
_LOOSE = re.compile(r"(?:(\d{4}-\d{2}-\d{2}) )?(\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?)([^\]\[]*)\]?\s*$")
_TAG = re.compile(r"([A-Z][A-Z_]*)(\d{1,6})")
_TAG_CACHE: dict[str, dict[str, int]] = {}


class Header(NamedTuple):
    ts: str | None
    tags: dict[str, int]
    message: str
    found: bool


def strip_process(text: str) -> str:
    """Drop a leading `(Name pid=N) ` that Ray and vLLM put in front of every line."""
    if text.startswith("("):
        match = _PROCESS.match(text)
        if match is not None:
            return text[match.end() :]
    return text


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


def parse_header(text: str) -> Header:
    """Split one line into timestamp, rank tags and message; `found` is False without a prefix."""
    text = strip_process(text)
    if text.startswith("["):
        match = _BRACKET.match(text)
        if match is not None:
            tags = parse_tags(match[3]) if match[3] else {}
            return Header(iso(match[1], match[2]), tags, text[match.end() :], True)
    elif text[:1].isdigit():
        match = _DICTCONFIG.match(text)
        if match is not None:
            tags = parse_tags(match[3]) if match[3] else {}
            return Header(iso(match[1], match[2]), tags, text[match.end() :], True)
    else:
        match = _VLLM.match(text)
        if match is not None:
            return Header(iso(match[1], match[2]), {}, text[match.end() :], True)
    return Header(None, {}, text, False)


def search_header(prefix: str) -> Header:
    """Header of a batch line whose prefix may carry junk (a tqdm bar, a missing `[`)."""
    header = parse_header(prefix)
    if header.found and not header.message.strip():
        return header
    # Only the tail: a timestamp belongs right before the message, and a bounded search stays linear.
    stamp = _LOOSE.search(prefix[-160:])
    if stamp is None:
        return Header(None, {}, prefix, False)
    return Header(iso(stamp[1], stamp[2]), parse_tags(stamp[3]), "", True)

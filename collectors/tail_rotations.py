"""The generations written between ours and the current file, after two or more rename rotations.

A rename rotation moves the file we were reading to a name next to the path (`server.log.1`). When
kvwatch was away across two or more of them (down, or the host unreachable), our file is further
down the line (`server.log.2`) and the generations written in between sit under the names between
it and the path. Their order comes from the rotation's naming, not from modification times (SFTP
gives whole seconds, and rotations can be seconds apart):

- numbered (logrotate's default `server.log.N`, savelog's from `.0`): newer is a smaller N, so from ours
  at K the ones in between are K-1, ..., 0, oldest first;
- dated (`dateext`, `server.log-20261203`, `server.log-2026-12-03`): a suffix that starts with a digit;
  newer sorts later, so the ones in between are the suffixes of the same shape (digits in the same
  places) after ours, in order.

A name that follows neither scheme has no "between": nothing is guessed. Compressed generations are
named too (`server.log.2.gz`), so the caller can count them: they cannot be read at an offset.
"""

from __future__ import annotations

import posixpath

from kvwatch.collectors.tail_copies import COMPRESSED

MAX_NUMBERED_DIGITS = 4  # `rotate 9999` at most; longer all-digit suffixes are dates (20261203)


def between(path: str, ours: str, listing: list[str]) -> list[str]:
    """Paths of `listing` rotated after `ours` and before `path`'s current file, oldest first."""
    base = posixpath.basename(path)
    suffix = _suffix(base, posixpath.basename(ours))
    if suffix is None:
        return []
    found: list[tuple[tuple[int, str], str]] = []
    for candidate in listing:
        other = _suffix(base, _uncompressed(posixpath.basename(candidate)))
        if other is None or other == suffix:
            continue
        key = _newer_key(suffix, other)
        if key is not None:
            found.append((key, candidate))
    return [p for _, p in sorted(found)]


def compressed(path: str) -> bool:
    return path.endswith(COMPRESSED)


def _suffix(base: str, name: str) -> str | None:
    """`.1` of `server.log.1`; None when `name` is not `base` plus a `.`/`-` suffix."""
    if len(name) > len(base) + 1 and name.startswith(base) and name[len(base)] in ".-":
        return name[len(base):]
    return None


def _uncompressed(name: str) -> str:
    for ending in COMPRESSED:
        if name.endswith(ending):
            return name[: -len(ending)]
    return name


def _numbered(suffix: str) -> int | None:
    digits = suffix[1:]
    if suffix[0] == "." and digits.isdigit() and len(digits) <= MAX_NUMBERED_DIGITS:
        return int(digits)
    return None


def _newer_key(ours: str, other: str) -> tuple[int, str] | None:
    """A sort key (oldest first) when `other` was rotated after `ours`, else None."""
    ours_n, other_n = _numbered(ours), _numbered(other)
    if ours_n is not None:
        return (-other_n, "") if other_n is not None and 0 <= other_n < ours_n else None
    if other_n is None and ours[1:2].isdigit() and _shape(other) == _shape(ours) and other > ours:
        return (0, other)
    return None


def _shape(suffix: str) -> str:
    """`-99999999` for `-20261203`: two dated names of one `dateformat` have the same shape."""
    return "".join("9" if c.isdigit() else c for c in suffix)

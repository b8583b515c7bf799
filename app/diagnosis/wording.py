"""Numbers in words, checked: a share is only of a known, positive whole, an unknown is said so.

Evidence sentences are read by people deciding a restart: "1300% of the 0 admissions" or a usage of
"0.00" that was never measured would mislead, so every rule formats through these.
"""

from __future__ import annotations


def share_of(part: float | None, whole: float | None) -> float | None:
    """part / whole, None when either is unknown or the whole is not positive (no share of nothing)."""
    if part is None or whole is None or whole <= 0:
        return None
    return part / whole


def num(value: float | None, spec: str = ".0f") -> str:
    """The value formatted, or "unknown"."""
    return "unknown" if value is None else format(value, spec)

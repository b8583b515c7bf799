"""The resume state of one followed path, committed by the store with the records it covers.

Identity of the file behind the path = inode + a fingerprint of its first bytes (up to 1 KiB,
growing while the file is young) + a marker: the hash of the bytes just before `offset`. The
marker is what notices a file truncated and regrown past the old offset while we were away.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, replace
from typing import Any

HEAD_BYTES = 1024
MARKER_BYTES = 64


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class DrainState:
    """An older generation still being read: after a rename rotation (the writer may lag), or from
    the copy a copytruncate left (`inode` is then the copy's)."""

    generation: int
    inode: int
    offset: int
    line_no: int


@dataclass(frozen=True, slots=True)
class TailState:
    """generation 0 (the default) means "nothing followed yet"."""

    generation: int = 0
    inode: int = 0
    offset: int = 0  # resumable: just past the last complete line
    line_no: int = 0  # complete lines in this generation
    fingerprint: str = ""  # digest of the first head_len bytes
    head_len: int = 0
    marker: str = ""  # digest of bytes [offset - min(offset, MARKER_BYTES), offset)
    draining: DrainState | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready; the store keeps it as is and gives it back to `from_dict`."""
        return asdict(self)

    to_dict = as_dict

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TailState:
        """Unknown keys are ignored (older/newer kvwatch); missing ones take their defaults."""
        if not data:
            return cls()
        names = set(cls.__dataclass_fields__) - {"draining"}
        fields = {k: v for k, v in data.items() if k in names}
        drain = data.get("draining")
        return cls(**fields, draining=DrainState(**drain) if drain else None)

    def with_(self, **changes: Any) -> TailState:
        return replace(self, **changes)

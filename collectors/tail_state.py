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
    """An older generation still being read after a rename rotation (the writer may lag)."""

    generation: int
    inode: int
    offset: int
    line_no: int


@dataclass(frozen=True, slots=True)
class TailState:
    generation: int
    inode: int
    offset: int  # resumable: just past the last complete line
    line_no: int  # complete lines in this generation
    fingerprint: str = ""  # digest of the first head_len bytes
    head_len: int = 0
    marker: str = ""  # digest of bytes [offset - min(offset, MARKER_BYTES), offset)
    draining: DrainState | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TailState:
        drain = data.get("draining")
        fields = {k: v for k, v in data.items() if k != "draining"}
        return cls(**fields, draining=DrainState(**drain) if drain else None)

    def with_(self, **changes: Any) -> TailState:
        return replace(self, **changes)

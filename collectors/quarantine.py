"""Sources of a host that cannot be read right now, set aside so the others keep flowing.

A client log the collecting user may not read, an output glob that matched a directory or a symlink
loop: each is one file's problem, not the connection's. Such a source is skipped for `hold_s` (the
glob interval), its error shown in its health, and then tried again; the host stays `up` and its
server log keeps flowing. Errors that are the connection's (StreamClosed, ConnectFailed, ...) still
end the connection and reconnect.
"""

from __future__ import annotations

import time

Key = tuple[str, str]  # (kind, path)


class Quarantine:
    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self._until: dict[Key, float] = {}
        self._failed: set[Key] = set()

    def hold(self, key: Key) -> None:
        self._until[key] = time.monotonic() + self.hold_s
        self._failed.add(key)

    def recovered(self, key: Key) -> bool:
        """True once for a source that failed before and has now been read."""
        if key not in self._failed:
            return False
        self._failed.discard(key)
        return True

    def held(self, key: Key) -> bool:
        until = self._until.get(key)
        if until is None:
            return False
        if time.monotonic() >= until:
            del self._until[key]  # try it again
            return False
        return True

    def release(self, key: Key) -> None:
        self._until.pop(key, None)
        self._failed.discard(key)

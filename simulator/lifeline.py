"""Children of the demo end when it does, even when it dies without cleaning up (SIGKILL, SIGTERM)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable


def watch_parent(parent: int, on_orphan: Callable[[], None], interval: float = 1.0) -> None:
    """Call `on_orphan` once this process's parent is no longer `parent` (it exited, maybe long ago).

    The pid comes from the parent itself: by the time a slow child asks getppid() the parent may
    already be gone and the child re-parented, which a pid read here would miss.
    """

    def loop() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        on_orphan()

    threading.Thread(target=loop, name="parent-watch", daemon=True).start()


def alive(pid: int) -> bool:
    """Running (a zombie, exited but not yet reaped by its parent, counts as gone)."""
    try:
        stat = open(f"/proc/{pid}/stat", encoding="ascii", errors="replace").read()  # noqa: SIM115
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def watch_pid(pid: int, on_gone: Callable[[], None], interval: float = 1.0) -> None:
    """Call `on_gone` once process `pid` has exited (for servers a controller restarts for the demo)."""

    def loop() -> None:
        while alive(pid):
            time.sleep(interval)
        on_gone()

    threading.Thread(target=loop, name="pid-watch", daemon=True).start()

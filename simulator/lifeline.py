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

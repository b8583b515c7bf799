"""Who evaluates alerts and sends the webhook when several web apps share one store: the holder of
one lease document (kind "lease", key "alerts"), like the hosts' leases of the collectors.

The holder renews the lease every BEAT_S seconds. Another process takes it over when the holder has
not renewed it for STALE_AFTER_S (3 beats), at once when the holder released it (a clean stop) or
when the holder ran on this machine and its process is gone (kill -9). Taking over and renewing are
compare-and-set writes (`Store.swap_document`), so of two contenders exactly one wins.

The holder trusts its lease only until STALE_AFTER_S - BEAT_S after its last renewal: it stops
sending before anyone else may start, as long as the machines' clocks agree to within a beat.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

from kvwatch.app.owners import this_owner
from kvwatch.app.pipeline.heartbeat import owner_alive
from kvwatch.app.store.base import Store

log = logging.getLogger(__name__)
LEASE_DOC, ALERTS_LEASE = "lease", "alerts"
BEAT_S = 2.0
STALE_AFTER_S = 3 * BEAT_S


class Lease:
    def __init__(self, store: Store, key: str = ALERTS_LEASE, *, beat_s: float = BEAT_S) -> None:
        self.store, self.key, self.beat_s = store, key, beat_s
        self.stale_after_s = 3 * beat_s
        # A nonce too: two services in one process (tests, an embedding) are two contenders.
        self.owner = f"{this_owner()}:{secrets.token_hex(3)}"
        self._mine: dict[str, Any] | None = None  # the document data while held
        self._renewed = float("-inf")  # monotonic time of the last successful write

    @property
    def held(self) -> bool:
        """Held and renewed recently enough that nobody else can have taken it over."""
        return self._mine is not None and time.monotonic() - self._renewed < self.stale_after_s - self.beat_s

    def holder(self) -> str | None:
        doc = self._doc()
        return doc["data"].get("owner") or None if doc is not None else None

    def beat(self) -> bool:
        """Renew the lease if held, else take it if it is free or stale; True while held."""
        now = time.time()
        try:
            if self._mine is not None and self._write(now, expect=self._mine):
                return True
            self._mine = None
            doc = self._doc()
            if doc is None:
                return self._take(now, None, None)
            if doc["data"].get("owner") == self.owner or _free(doc, now, self.stale_after_s):
                return self._take(now, doc["data"], doc["t"])
        except Exception:  # the store is unreachable: `held` runs out unless a renewal gets through
            log.exception("alert lease: cannot reach the store")
        return False

    def release(self) -> None:
        """Give the lease up (a clean stop): the next process takes it at its next beat."""
        mine, self._mine = self._mine, None
        if mine is not None:
            self.store.swap_document(LEASE_DOC, self.key, "", time.time(), {"owner": ""}, expect=mine)

    def _take(self, now: float, expect: dict[str, Any] | None, expect_t: float | None) -> bool:
        data = {"owner": self.owner, "since": now}
        if not self.store.swap_document(LEASE_DOC, self.key, "", now, data, expect=expect, expect_t=expect_t):
            return False  # someone else was faster
        previous = (expect or {}).get("owner")
        log.info("alert lease %s taken%s", self.key, f" over from {previous}" if previous else "")
        self._mine, self._renewed = data, time.monotonic()
        return True

    def _write(self, now: float, expect: dict[str, Any]) -> bool:
        if not self.store.swap_document(LEASE_DOC, self.key, "", now, expect, expect=expect):
            log.warning("alert lease %s lost: another process holds it", self.key)
            return False
        self._renewed = time.monotonic()
        return True

    def _doc(self) -> dict[str, Any] | None:
        return next((d for d in self.store.documents(LEASE_DOC) if d["key"] == self.key), None)


def _free(doc: dict[str, Any], now: float, stale_after_s: float) -> bool:
    """Released, not renewed for `stale_after_s`, or held by a process of this machine that is gone."""
    owner = str(doc["data"].get("owner") or "")
    return not owner or not owner_alive(owner, now, doc["t"], stale_after_s)

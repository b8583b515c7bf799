"""Webhook delivery: one JSON POST per alert state change, retried with backoff, never duplicated.

The payload is Slack-compatible (`{"text": ...}`, which Slack, Mattermost and most chat hooks
show) plus structured fields for anything else: `status`, `previous`, `dedup_key`, `alert`.

Only changes to firing and to resolved are sent (pending and clearing are for the page, and so is
a clearing alert firing again: the receiver was never told it stopped). Each change is written
to an outbox document (kind "alert_delivery", key "host/rule/seq") before it is sent and marked
sent after a 2xx, so a restart sends what was still pending and never re-sends what was sent; the
same holds when another web app on the store takes the alerts lease over (app/alerts/lease.py). A
process killed between a 2xx and marking it sent leaves it pending: that one message goes out twice.
The webhook URL may embed a secret (Slack's does): logs name only its scheme and host.
"""

from __future__ import annotations

import json
import logging
import queue
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from kvwatch.app.alerts.engine import Change
from kvwatch.app.alerts.state import NOTIFIED_STATES
from kvwatch.app.store.base import Store
from kvwatch.collectors.periodic import Periodic

log = logging.getLogger(__name__)
DELIVERY_DOC = "alert_delivery"
SEND_EVERY_S = 2.0
# Sent and failed messages stay in the outbox this long (to look into), then go: the lease holder
# reads the whole outbox every 2 s, so an outbox that only grew would cost more every day.
DELIVERED_KEEP_S = 7 * 86400.0
RETRYABLE_STATUS = frozenset({408, 425, 429})


class WebhookDelivery:
    def __init__(
        self,
        url: str,
        store: Store,
        *,
        base_url: str = "",
        max_attempts: int = 8,
        backoff_s: float = 1.0,
        backoff_max_s: float = 60.0,
        timeout_s: float = 10.0,
    ) -> None:
        self.url = _http_only(url)
        self.store, self.base_url = store, base_url
        self.max_attempts, self.backoff_s, self.backoff_max_s = max_attempts, backoff_s, backoff_max_s
        self.timeout_s = timeout_s
        self._queue: queue.Queue[tuple[str, str, dict[str, Any]]] = queue.Queue()
        # A queue is sent as soon as something is put in it (wake); the interval only backs that up.
        self._loop = Periodic("alert-webhook", self._send_queued, SEND_EVERY_S)
        self._known: set[str] = set()
        # False once this process may no longer send (it lost the alerts lease): stop, leave it pending.
        self.may_send: Callable[[], bool] = lambda: True
        self.sent = 0  # counters for /api/hosts-style health and tests
        self.failed = 0

    def retarget(self, url: str) -> None:
        """Post to `url` from the next attempt on (a config reload changed the webhook)."""
        self.url = _http_only(url)

    @property
    def target(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.hostname}"

    def start(self) -> None:
        """Queue what an earlier run left unsent, then start the sender thread."""
        self.adopt_pending()
        self._loop.start()

    def adopt_pending(self) -> int:
        """Queue every pending outbox message this sender does not know yet: at start, and after
        taking the alerts lease over, one a stalled former holder wrote late. Returns how many."""
        adopted = 0
        done_before = time.time() - DELIVERED_KEEP_S
        outbox = self.store.documents(DELIVERY_DOC)
        expired = {doc["key"] for doc in outbox if doc["data"].get("status") != "pending" and doc["t"] < done_before}
        if expired:
            self.store.delete_documents(DELIVERY_DOC, sorted(expired))
        for doc in outbox:
            if doc["key"] in self._known or doc["key"] in expired:
                continue
            self._known.add(doc["key"])
            if doc["data"].get("status") == "pending":
                self._queue.put((doc["key"], doc["host"], doc["data"]))
                adopted += 1
        if adopted:
            self._loop.wake()
        return adopted

    def submit(self, change: Change) -> None:
        """Called for every change; sends firing and resolved, each (host, rule, seq) once."""
        if not notifies(change):
            return
        key = f"{change.alert.key}/{change.alert.seq}"
        if key in self._known:
            return
        self._known.add(key)
        data = {"status": "pending", "attempts": 0, "body": message(change, key, self.base_url)}
        self.store.put_document(DELIVERY_DOC, key, change.alert.host, time.time(), data)
        self._queue.put((key, change.alert.host, data))
        self._loop.wake()

    def stop(self, timeout: float = 5.0) -> None:
        self._loop.stop(timeout)

    def drain(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued so far was sent or given up (tests, clean shutdown)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self._queue.unfinished_tasks

    def _send_queued(self) -> None:
        """One tick: send what is queued, oldest first, until the queue is empty. Once the loop is
        stopping each item is let go unsent: it stays pending in the outbox for the next start or
        lease holder (`_deliver` returns at once)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            try:
                self._deliver(*item)
            finally:
                self._queue.task_done()

    def _deliver(self, key: str, host: str, data: dict[str, Any]) -> None:
        for attempt in range(1, self.max_attempts + 1):
            if self._loop.stopping or not self.may_send():
                return  # stays "pending" in the outbox: the next start (or lease holder) sends it
            error, retry = self._post(data["body"])
            data = {**data, "attempts": attempt}
            if error is None:
                self.sent += 1
                self.store.put_document(DELIVERY_DOC, key, host, time.time(), {**data, "status": "sent"})
                return
            log.warning("webhook %s: %s: attempt %d failed: %s", self.target, key, attempt, error)
            if not retry or attempt == self.max_attempts:
                break
            delay = min(self.backoff_max_s, self.backoff_s * 2 ** (attempt - 1)) * random.uniform(0.8, 1.2)
            self._loop.wait(delay)
        self.failed += 1
        self.store.put_document(DELIVERY_DOC, key, host, time.time(), {**data, "status": "failed"})

    def _post(self, body: dict[str, Any]) -> tuple[str | None, bool]:
        """(None, _) when accepted; otherwise the error and whether trying again can help."""
        request = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "User-Agent": "kvwatch-alerts"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                response.read()
            return None, False
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code}", exc.code >= 500 or exc.code in RETRYABLE_STATUS
        except (urllib.error.URLError, OSError) as exc:
            return str(getattr(exc, "reason", exc)), True


def notifies(change: Change) -> bool:
    """Does the webhook hear of `change`? Firing (not again after clearing) and resolved."""
    again = change.alert.state == "firing" and change.previous == "clearing"
    return change.alert.state in NOTIFIED_STATES and not again


def _http_only(url: str) -> str:
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError("webhook: only http:// and https:// URLs are posted to")
    return url


def chat_escape(text: str) -> str:
    """Text as Slack/Mattermost show it literally: `<...>` there is a link or a mention (`<!channel>`)
    and `&` starts an entity, so names and log-derived words in a summary are escaped (Slack's rule)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def message(change: Change, dedup_key: str, base_url: str = "") -> dict[str, Any]:
    """The POST body; `base_url` ("http://host:port" of the dashboard) makes the chart link absolute."""
    link = base_url + change.payload["link"]
    alert = {**change.payload, "link": link}
    label = str(alert["state"]).upper()
    chart = f"<{link}|chart>" if link.startswith(("http://", "https://")) else f"chart: {link}"
    late = " (found in a backlog)" if alert.get("late") else ""
    return {
        "text": f"[{label}] {chat_escape(alert['summary'])}{late} {chart}",
        "status": alert["state"],
        "previous": change.previous,
        "dedup_key": dedup_key,
        "alert": alert,
    }

"""Two web apps' alerting on one store (SQLite file, temp PostgreSQL cluster), with a real HTTP
receiver: one evaluates and sends, the other shows the stored states and streams their changes."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.alerts import start_alerting
from kvwatch.app.alerts.delivery import DELIVERY_DOC
from kvwatch.app.alerts.lease import ALERTS_LEASE, LEASE_DOC
from kvwatch.app.alerts.service import alerts_view
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.services import Services
from kvwatch.app.store import open_store
from kvwatch.app.store.base import Batch, EventRow
from tests.alerts.recorded import T0
from tests.alerts.test_alert_api import saturate, wait_for
from tests.alerts.test_alert_webhook import Receiver

RULE = "token_usage_high"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


class App:
    """One web app's services on the shared store, with what its bus published recorded."""

    def __init__(self, url: str, webhook: str, tmp_path: Path) -> None:
        host = HostConfig(name="gpu1", ssh="local", server_log="/logs/sglang.log")
        config = Config(server=ServerConfig(data_dir=str(tmp_path), webhook=webhook), hosts=(host,))
        self.services = Services(config, open_store(url))
        self.published: list[tuple[str, Any]] = []
        publish = self.services.bus.publish

        def recording(event: str, data: Any) -> None:
            self.published.append((event, data))
            publish(event, data)

        self.services.bus.publish = recording  # type: ignore[method-assign]

    def start(self) -> App:
        self.services.alerts = start_alerting(self.services, interval=0.1)
        return self

    @property
    def alerting(self) -> Any:
        assert self.services.alerts is not None
        return self.services.alerts

    def streamed(self, state: str) -> list[dict[str, Any]]:
        return [d for e, d in self.published if e == "alert" and d["rule"] == RULE and d["state"] == state]


def sent(receiver: Receiver) -> list[str]:
    return [b["status"] for b in list(receiver.accepted) if b["alert"]["rule"] == RULE]


def test_two_apps_send_each_message_once(store_url: str, tmp_path: Path, receiver: Receiver) -> None:
    holder = App(store_url, receiver.url, tmp_path).start()
    follower = App(store_url, receiver.url, tmp_path).start()
    try:
        assert holder.alerting.leading and not follower.alerting.leading
        saturate(holder.services.store)
        wait_for(lambda: sent(receiver) == ["firing"])
        # The follower shows it, from the store, and streams the change to its pages.
        firing = wait_for(lambda: [a for a in alerts_view(follower.services) if a["state"] == "firing"])
        assert [a["rule"] for a in firing] == [RULE] and firing[0]["since"] == T0 + 120
        wait_for(lambda: follower.streamed("firing"))
        time.sleep(1.0)  # ten of the follower's ticks: it must not send too
        assert sent(receiver) == ["firing"]
        assert len(follower.streamed("firing")) == 1
    finally:
        follower.services.stop()
        holder.services.stop()


def test_a_followers_controller_restart_mutes_and_rearms_at_the_holder(
    store_url: str, tmp_path: Path, receiver: Receiver
) -> None:
    holder = App(store_url, receiver.url, tmp_path).start()
    follower = App(store_url, receiver.url, tmp_path).start()
    try:
        saturate(holder.services.store)
        wait_for(lambda: sent(receiver) == ["firing"])
        with follower.alerting.muting("gpu1"):  # the restart runs in the follower's process
            wait_for(lambda: holder.alerting.muted("gpu1") is not None)
            crash = EventRow("event", T0 + 205, 1, {"event": "crash"})
            holder.services.store.commit(Batch("gpu1", "server_log", "/l", events=[crash]))
            time.sleep(0.5)
            assert sent(receiver) == ["firing"], "nothing about a muted host"
        wait_for(lambda: sent(receiver) == ["firing", "resolved"])
        assert "re-armed after controller restart" in receiver.accepted[-1]["text"]
        wait_for(lambda: holder.alerting.muted("gpu1") is None and follower.alerting.muted("gpu1") is None)
        time.sleep(0.5)
        assert sent(receiver) == ["firing", "resolved"]
    finally:
        follower.services.stop()
        holder.services.stop()


def test_a_message_a_killed_holder_left_unsent_is_sent_once_by_the_next(
    store_url: str, tmp_path: Path, receiver: Receiver
) -> None:
    receiver.fail_first = 10**6  # the hook is down while the first holder runs
    first = App(store_url, receiver.url, tmp_path).start()
    saturate(first.services.store)
    wait_for(lambda: receiver.attempts >= 1)
    # The first holder dies: its threads end, and the lease stays as a killed process leaves it
    # (an owner that is gone), the firing message pending in the outbox.
    lease = first.services.store.documents(LEASE_DOC)[0]
    first.alerting._loop.stop()
    first.alerting._lease_loop.stop()
    first.alerting.delivery.stop()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    data = {**lease["data"], "owner": f"{socket.gethostname()}:{gone.pid}:dead"}
    first.services.store.put_document(LEASE_DOC, ALERTS_LEASE, "", time.time(), data)
    outbox = first.services.store.documents(DELIVERY_DOC)
    assert [d["data"]["status"] for d in outbox] == ["pending"]

    receiver.fail_first = receiver.attempts  # the hook is back
    second = App(store_url, receiver.url, tmp_path).start()
    try:
        assert second.alerting.leading, "a lease of a process that is gone is taken at once"
        wait_for(lambda: sent(receiver) == ["firing"])
        wait_for(lambda: [d["data"]["status"] for d in second.services.store.documents(DELIVERY_DOC)] == ["sent"])
        time.sleep(0.5)
        assert sent(receiver) == ["firing"], "re-evaluating the same change must not send it again"
    finally:
        second.services.stop()
        first.services.store.close()


def test_a_lone_app_evaluates_at_once(store_url: str, tmp_path: Path, receiver: Receiver) -> None:
    app = App(store_url, receiver.url, tmp_path)
    saturate(app.services.store)
    started = time.monotonic()
    app.start()
    try:
        assert app.alerting.leading
        wait_for(lambda: sent(receiver) == ["firing"])
        assert time.monotonic() - started < 1.0
    finally:
        app.services.stop()
    # A clean stop gives the lease back: the next app holds it at once too.
    again = App(store_url, receiver.url, tmp_path).start()
    try:
        assert again.alerting.leading
    finally:
        again.services.stop()
    assert sent(receiver) == ["firing"], "the firing alert carried on, not sent again"

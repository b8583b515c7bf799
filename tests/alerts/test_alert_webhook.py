"""The webhook against a real HTTP receiver on 127.0.0.1: one message per state change, retries,
nothing re-sent after a restart."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.alerts.delivery import DELIVERY_DOC, WebhookDelivery
from tests.alerts.recorded import T0, Rig, every

RULE = "token_usage_high"


class Receiver:
    """An HTTP server that records every POST body; the first `fail_first` get `fail_status`."""

    def __init__(self) -> None:
        self.accepted: list[dict[str, Any]] = []
        self.attempts = 0
        self.fail_first = 0
        self.fail_status = 503
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with receiver.lock:
                    receiver.attempts += 1
                    failing = receiver.attempts <= receiver.fail_first
                    if not failing:
                        receiver.accepted.append(body)
                self.send_response(receiver.fail_status if failing else 200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/T000/SECRET"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def states(self) -> list[str]:
        with self.lock:
            return [body["status"] for body in self.accepted]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


def wire(rig: Rig, url: str, **options: Any) -> WebhookDelivery:
    delivery = WebhookDelivery(url, rig.store, backoff_s=0.05, **options)
    rig.engine.on_change = delivery.submit
    delivery.start()
    return delivery


def test_one_message_per_state_change(tmp_path: Path, receiver: Receiver) -> None:
    rig = Rig(tmp_path / "kvwatch.db")
    delivery = wire(rig, receiver.url)
    usage = [0.5] * 12 + [0.97] * 10 + [0.5] * 20  # a short spike: pending only, never sent
    usage += [0.97] * 40 + [0.5] * 70 + [0.97] * 30  # firing, resolved, firing again
    rig.play("token_usage", every(T0, usage))
    assert delivery.drain()
    delivery.stop()
    assert receiver.states() == ["firing", "resolved", "firing"]
    assert receiver.attempts == 3
    keys = [body["dedup_key"] for body in receiver.accepted]
    assert len(set(keys)) == 3
    assert all(key.startswith("gpu1/token_usage_high/") for key in keys)
    first = receiver.accepted[0]
    assert first["text"].startswith("[FIRING] gpu1: KV token usage high (97.0%)")
    assert first["previous"] == "pending"
    assert first["alert"]["rule"] == RULE
    assert first["alert"]["since"] == T0 + 60 + 50 + 100 + 120
    assert receiver.accepted[1]["text"].startswith("[RESOLVED]")
    assert delivery.sent == 3


def test_restart_sends_nothing_twice_and_what_was_pending_once(tmp_path: Path, receiver: Receiver) -> None:
    rig = Rig(tmp_path / "kvwatch.db")
    delivery = wire(rig, receiver.url)
    rig.play("token_usage", every(T0, [0.97] * 30))
    assert delivery.drain()
    delivery.stop()
    assert receiver.states() == ["firing"]
    # A change whose POST never happened (kvwatch died first) is still in the outbox as pending.
    body = {"text": "[RESOLVED] left over", "status": "resolved", "dedup_key": "gpu1/x/1"}
    rig.store.put_document(DELIVERY_DOC, "gpu1/x/1", "gpu1", T0, {"status": "pending", "body": body})
    rig.engine = rig.new_engine()
    again = wire(rig, receiver.url)
    rig.play("token_usage", every(T0 + 150, [0.96] * 20))  # still firing: no change, no message
    assert again.drain()
    again.stop()
    assert receiver.states() == ["firing", "resolved"]
    assert receiver.accepted[1]["dedup_key"] == "gpu1/x/1"


def test_a_failing_receiver_is_retried_with_backoff(tmp_path: Path, receiver: Receiver) -> None:
    receiver.fail_first = 2
    rig = Rig(tmp_path / "kvwatch.db")
    delivery = wire(rig, receiver.url)
    rig.play("token_usage", every(T0, [0.97] * 30))
    assert delivery.drain()
    delivery.stop()
    assert receiver.attempts == 3
    assert receiver.states() == ["firing"]
    sent = rig.store.documents(DELIVERY_DOC)
    assert [(d["data"]["status"], d["data"]["attempts"]) for d in sent] == [("sent", 3)]


def test_a_rejected_message_is_not_retried(tmp_path: Path, receiver: Receiver) -> None:
    receiver.fail_first, receiver.fail_status = 5, 400
    rig = Rig(tmp_path / "kvwatch.db")
    delivery = wire(rig, receiver.url)
    rig.play("token_usage", every(T0, [0.97] * 30))
    assert delivery.drain()
    delivery.stop()
    assert receiver.attempts == 1
    assert delivery.failed == 1
    assert [d["data"]["status"] for d in rig.store.documents(DELIVERY_DOC)] == ["failed"]


def test_an_unreachable_receiver_gives_up_after_max_attempts(tmp_path: Path, caplog: Any) -> None:
    rig = Rig(tmp_path / "kvwatch.db")
    closed = Receiver()
    url = closed.url
    closed.close()  # nothing listens on that port any more
    delivery = wire(rig, url, max_attempts=3)
    rig.play("token_usage", every(T0, [0.97] * 30))
    assert delivery.drain()
    delivery.stop()
    assert delivery.failed == 1
    assert "SECRET" not in caplog.text  # the URL's secret path never reaches the log
    assert "http://127.0.0.1" in caplog.text


def test_the_outbox_forgets_delivered_messages_after_a_week(tmp_path: Path, receiver: Receiver) -> None:
    """Sent and failed messages older than DELIVERED_KEEP_S leave the outbox; pending ones never do."""
    from kvwatch.app.alerts.delivery import DELIVERED_KEEP_S

    rig = Rig(tmp_path / "kvwatch.db")
    now = time.time()
    old, recent = now - DELIVERED_KEEP_S - 60, now - DELIVERED_KEEP_S + 3600
    body = {"text": "[RESOLVED] left over", "status": "resolved", "dedup_key": "gpu1/p/1"}
    for key, t, status in [("gpu1/a/1", old, "sent"), ("gpu1/b/1", old, "failed"),
                           ("gpu1/p/1", old, "pending"), ("gpu1/c/1", recent, "sent")]:
        rig.store.put_document(DELIVERY_DOC, key, "gpu1", t, {"status": status, "body": body})
    delivery = WebhookDelivery(receiver.url, rig.store)
    assert delivery.adopt_pending() == 1
    left = {d["key"]: d["data"]["status"] for d in rig.store.documents(DELIVERY_DOC)}
    assert left == {"gpu1/p/1": "pending", "gpu1/c/1": "sent"}

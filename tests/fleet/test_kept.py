"""The fleet's per-host keep of costly answers (verdicts, sparklines): one maker a host at a time."""

from __future__ import annotations

import threading
import time

from kvwatch.app.api.fleet_rows import Kept


def test_callers_at_once_share_one_answer_per_host() -> None:
    kept = Kept(ttl=10.0)
    made: list[str] = []

    def slow(host: str) -> str:
        made.append(host)
        time.sleep(0.2)
        return f"verdict of {host}"

    answers: list[str] = []
    callers = [threading.Thread(target=lambda h=host: answers.append(kept.get(h, "run-1", 100.0, lambda: slow(h))))
               for host in ("a", "a", "a", "b")]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(5)
    assert sorted(made) == ["a", "b"]  # the page's answer and the keeper's first event: one diagnosis each
    assert sorted(answers) == ["verdict of a"] * 3 + ["verdict of b"]


def test_an_answer_is_made_again_after_its_ttl_or_for_a_new_run() -> None:
    kept = Kept(ttl=10.0)
    count = iter(range(100))
    assert kept.get("a", "run-1", 100.0, lambda: next(count)) == 0
    assert kept.get("a", "run-1", 109.0, lambda: next(count)) == 0
    assert kept.get("a", "run-2", 109.0, lambda: next(count)) == 1  # a new run: at once
    assert kept.get("a", "run-2", 119.5, lambda: next(count)) == 2  # past the TTL

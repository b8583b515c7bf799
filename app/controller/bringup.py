"""Bringing one server up on the host and following it until ready, across dropped connections.

The worker-thread half of HostController (app/controller/restart.py): start a target where the
host's record does not already name it, wait for the ready line and /health, fail fast on a fatal
line, and wait out a lost connection for `reconnect_window` before giving up (Interrupted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvwatch.app.config.controller import RestartTable
from kvwatch.app.controller.operation import Operation, Target
from kvwatch.app.controller.remote import HelperFailed, RemoteHost
from kvwatch.app.controller.sinks import Ledger
from kvwatch.collectors.base import CollectorError

HEALTH_PATH = "/health"


class Interrupted(Exception):
    """The host stayed unreachable longer than the reconnect window."""


class BringUp:
    """Mixin: what HostController's worker does with one Target. The controller sets these attributes."""

    remote: RemoteHost
    settings: RestartTable  # the host's [hosts.restart]: its timeouts
    ledger: Ledger
    reconnect_window: float
    clock: Callable[[], float]
    sleep: Callable[[float], None]

    @property
    def name(self) -> str:
        raise NotImplementedError

    def _bring_up(self, op: Operation, target: Target) -> str | None:
        """None when `target` is up and healthy; else why not (the failed server is stopped)."""
        failure: str | None = self._retrying(op, lambda: self._attempt(op, target))
        return failure

    def _retrying(self, op: Operation, step: Callable[[], Any]) -> Any:
        while True:
            try:
                return step()
            except HelperFailed:
                raise  # the host answered: this is no connection problem, and waiting will not fix it
            except CollectorError as exc:
                state = op.state
                op.step("reconnecting", f"lost {self.name} while {state}: {exc}")
                self._await_host(op, state)
                op.step(state, f"{self.name} is back; inspecting its state")

    def _await_host(self, op: Operation, state: str) -> None:
        deadline, delay = self.clock() + self.reconnect_window, 0.5
        while self.clock() < deadline:
            self.sleep(delay)
            try:
                self.remote.status("127.0.0.1", 0)
                return
            except CollectorError:
                delay = min(delay * 2, 10.0)
        raise Interrupted(f"lost {self.name} for more than {self.reconnect_window:.0f} s while {state}; "
                          "the host's record says what runs there (GET .../restart shows it once reachable)")

    def _attempt(self, op: Operation, target: Target) -> str | None:
        status = self.remote.status(target.host, target.port)
        record = status.get("record") or {}
        if record.get("run_id") != target.run_id:  # else it started just before a drop: follow it
            failure = self._replace(op, target, status)
            if failure is not None:
                return failure
        op.log_path = target.log
        return self._await_ready(op, target)

    def _replace(self, op: Operation, target: Target, status: dict[str, Any]) -> str | None:
        record = status.get("record") or {}
        if status.get("ours"):
            op.from_flags = dict(record.get("flags") or op.from_flags)
            op.step("stopping", f"stopping run {record.get('run_id')} (pid {record.get('pid')})")
            stopped = self.remote.stop(self.settings.stop_timeout)
            self.ledger.ended(str(record.get("run_id")), f"stopped for run {target.run_id} ({stopped.get('stopped')})")
            if stopped.get("left") or not stopped.get("port_free"):
                left, free = stopped.get("left"), stopped.get("port_free")
                return f"the old server did not go away (processes left: {left}, port free: {free})"
        elif status.get("port_open"):
            return f"port {target.port} is in use by a process kvwatch did not start; stop it by hand once"
        op.step("starting", f"starting run {target.run_id}: {' '.join(target.argv)}")
        started = self.remote.start(target.record(op.op_id, self.clock()))
        if "error" in started:
            self.ledger.ended(target.run_id, f"not started: {started['error']}")
            return str(started["error"])
        return None

    def _await_ready(self, op: Operation, target: Target) -> str | None:
        op.step("waiting", f"waiting for run {target.run_id} to be ready")
        deadline = self.clock() + self.settings.ready_timeout
        while True:
            check = self.remote.check(op.offsets.get(target.run_id, 0), HEALTH_PATH)
            if check.get("run_id") != target.run_id:
                return f"the host's record now names run {check.get('run_id')}, not {target.run_id}"
            op.offsets[target.run_id] = int(check["offset"])
            fatal = op.scan(target.run_id, str(check.get("text", "")))
            failure = (f"fatal line in the log: {fatal}" if fatal
                       else "the server exited before it was ready" if not check.get("alive")
                       else f"not ready after {self.settings.ready_timeout:.0f} s" if self.clock() > deadline
                       else None)
            if failure is not None:
                self._stop_failed(target, failure)
                return failure
            if target.run_id in op.ready and check.get("health") == 200:
                self.remote.promote(target.run_id)
                return None
            self.sleep(self.settings.poll_interval)

    def _stop_failed(self, target: Target, failure: str) -> None:
        self.remote.stop(self.settings.stop_timeout)
        self.ledger.ended(target.run_id, failure)

"""Restart one host's SGLang server with new flags: validated, guarded, reversible.

`HostController.begin()` refuses synchronously, before anything runs on the host:
a stale `expected_run` (409, checked before the host is asked anything and again once locked) ->
invalid flags (422) -> a vetoed value (403) -> the restart-loop cap (429) -> this controller's lock,
then the host's lease (409; the lease is a directory on the host, so two kvwatch processes exclude
each other too). Then a worker thread:

1. inspect the host: the record of the server kvwatch started (pid + start time + cmdline);
   a port taken by a process kvwatch did not start ends it here, nothing stopped;
2. stop kvwatch's server: SIGTERM to its process group, SIGKILL after `stop_timeout`, port free;
3. start the target detached (new session, stdin /dev/null, a new per-run log) and tell the RunSink;
4. follow the run's log and GET /health until the ready line has been seen and /health answers 200,
   failing fast on a fatal line, an exit or `ready_timeout`;
5. on success the flags become the host's last good ones; on failure the failed server is stopped
   and the last good flags (or the launch flags) are started once more, the same way.

Every step is idempotent against the host's record, so when the transport drops (CollectorError)
the worker waits for the host and re-inspects: a run that started is followed, one that did not is
started, and the helper never starts a second server while kvwatch's one is alive or the port is taken.
Every request ends in exactly one audit record.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kvwatch.app.config.controller import ControllerConfig
from kvwatch.app.controller.bringup import BringUp, Interrupted
from kvwatch.app.controller.coalesce import Coalesced
from kvwatch.app.controller.errors import Busy, HostUnavailable, InvalidFlags, RestartRefused, StaleRun
from kvwatch.app.controller.forecast import Forecasts
from kvwatch.app.controller.operation import Operation, Target, new_run_id
from kvwatch.app.controller.plan import Problem, StartWindow, plan_flags, plan_problems, shown
from kvwatch.app.controller.remote import RemoteHost
from kvwatch.app.controller.sinks import AuditSink, Forecast, Ledger, Outcome, RestartRecord, RunSink
from kvwatch.app.flags.argv import Launch, parse_launch
from kvwatch.app.flags.remote import DEFAULT_CACHE, SchemaCache, remote_schema
from kvwatch.app.flags.schema import FlagError, FlagValue, Schema, ValidationError, load_bundled
from kvwatch.app.owners import ended_here, this_owner
from kvwatch.app.runs.logs import run_log_path
from kvwatch.app.runs.model import Run
from kvwatch.collectors.base import CollectorError, Transport

VIEW_MAX_AGE_S = 2.0  # the controller panel's view of a host, shared by concurrent GETs

log = logging.getLogger(__name__)


class HostController(BringUp):
    """Restarts for one host. Thread-safe; at most one operation at a time."""

    def __init__(self, config: ControllerConfig, connect: Callable[[], Transport], audit: AuditSink, runs: RunSink, *,
                 cache: SchemaCache = DEFAULT_CACHE, reconnect_window: float = 120.0,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                 current_run: Callable[[], Run | None] | None = None, forecast: Forecast | None = None) -> None:
        self.config = config
        self._current_run = current_run  # the run registry's view (GET /api/runs); wiring passes the store's
        # the prediction kept with each new run (app/diagnosis through the wiring)
        self._forecasts = Forecasts(config.host, forecast, self.current_run)
        self.settings = config.restart
        self.remote = RemoteHost(connect, config.python, config.state_dir, config.host)
        self.ledger, self.cache = Ledger(config.host, audit, runs, clock), cache
        self.reconnect_window, self.clock, self.sleep = reconnect_window, clock, sleep
        self.last: Operation | None = None
        self._lock = threading.Lock()
        self._window = StartWindow(config.host, self.settings.max_restarts, self.settings.restart_window)
        self._own_ops: set[str] = set()
        self._schema: Schema | None = None
        self._thread: threading.Thread | None = None
        self._retired = False  # a config reload replaced or removed this controller
        self._gate = threading.Lock()  # makes "not busy, so retire" and "not retired, so lock" atomic
        self._views: Coalesced[dict[str, Any]] = Coalesced(VIEW_MAX_AGE_S)
        # Asked first by each restart's worker: the demo (app/commands/demo.py) stops its scripted story
        # there and hands its server over, so that this restart stops it and nothing else starts one.
        # A message it returns is the panel's notice (GET .../controller).
        self.on_takeover: Callable[[Operation], str | None] | None = None
        self.notice: dict[str, Any] | None = None
        # Told of every restart this controller begins (a campaign pauses for one that is not its own).
        self.watchers: list[Callable[[Operation], None]] = []

    @property
    def name(self) -> str:
        return self.config.host

    @property
    def busy(self) -> bool:
        """True while a restart runs: alerting inhibits KV and stale alerts for this host meanwhile."""
        return self._lock.locked()

    def retire(self) -> bool:
        """Stop taking restarts because a config reload replaces or removes this controller; False (and
        nothing changes) while a restart runs. `busy` stays false: alerting must not see a restart."""
        with self._gate:  # not the restart lock itself: `busy` must not flicker for alerting
            if self._lock.locked():
                return False
            self._retired = True
            return True

    def unretire(self) -> None:
        """The reload that retired this controller was refused after all."""
        with self._gate:
            self._retired = False

    def succeed(self, old: HostController) -> None:
        """Carry over what a reload must not reset: the last operation (the restart panel shows it),
        the restart-loop cap's recent starts, and the leases this process took."""
        self.last, self.on_takeover, self.notice = old.last, old.on_takeover, old.notice
        self.watchers = list(old.watchers)
        self._window.inherit(old._window)
        self._own_ops |= old._own_ops

    def schema(self) -> Schema:
        """The flag schema to validate against: the host's own sglang, or a pinned bundled version.

        Remote: the installed version is asked every time (cheap, no torch import), so an upgrade on
        the host is noticed; the extraction itself runs once per version (SchemaCache).
        """
        pinned = self.settings.flags_schema
        if pinned != "remote" and self._schema is not None:
            return self._schema
        try:
            self._schema = (remote_schema(self.remote, self.config.python, self.cache)
                            if pinned == "remote" else load_bundled(pinned))
        except (CollectorError, FlagError) as exc:
            raise HostUnavailable(f"{self.name}: cannot read sglang's flags: {exc}") from exc
        return self._schema

    def launch(self, schema: Schema | None = None) -> Launch:
        launch, errors = parse_launch(schema or self.schema(), self.config.launch)
        if errors:
            raise InvalidFlags([ValidationError(e.flag, f"in hosts.{self.name}.launch: {e.message}") for e in errors])
        return launch

    def adopt(self, pid: int, log_path: str) -> None:
        """Take over a running server that kvwatch did not start (the launch flags are its flags), so
        the next restart stops it by pid, start time and command line like any other."""
        schema = self.schema()
        flags = self.launch(schema).flags
        target = self._target(f"adopted-{pid}", flags, log_path)
        answer = self.remote.adopt({"run_id": target.run_id, "pid": pid, "flags": flags, "log": log_path,
                                    "host": target.host, "port": target.port})
        if "error" in answer:
            raise HostUnavailable(f"{self.name}: cannot adopt pid {pid}: {answer['error']}")

    def plan(self, flags: dict[str, object] | None = None, preset: str | None = None) -> dict[str, FlagValue]:
        """The complete flags a request means (launch + preset + flags). Raises InvalidFlags or Vetoed."""
        schema = self.schema()
        return plan_flags(self.config, schema, self.launch(schema), flags, preset)

    def problems(self, flags: dict[str, object] | None = None, preset: str | None = None) -> list[Problem]:
        """Every reason `plan` would refuse this request, per flag, without raising (the editor's dry run)."""
        schema = self.schema()
        return plan_problems(self.config, schema, self.launch(schema), flags, preset)

    def current_run(self) -> Run | None:
        """The host's current run as GET /api/runs shows it. Without a registry wired in, this controller
        knows only the run it started last (id and flags, nothing logged)."""
        if self._current_run is not None:
            return self._current_run()
        if self.last is None:
            return None
        return Run(self.last.run_id, self.name, self.last.requested_at, flags=dict(self.last.to_flags),
                   source="controller", log_path=self.last.log_path)

    def _require_current(self, expected_run: str | None) -> None:
        """A request made against a run the host has since left (another tab, another engineer) is refused."""
        if expected_run is None:
            return
        current = self.current_run()
        if current is None or current.id != expected_run:
            raise StaleRun(self.name, expected_run, *((current.id, current.flags) if current else (None, None)))

    def begin(self, who: str, flags: dict[str, object] | None = None, preset: str | None = None,
              expected_run: str | None = None) -> Operation:
        """Check, lock and start a restart in the background; the Operation carries the new run_id.

        `expected_run`: the run the requester saw; refused (StaleRun) when the host is on another one now."""
        at = self.clock()
        to_flags: dict[str, FlagValue] = {}
        try:
            self._require_current(expected_run)  # before any SSH: a stale request touches nothing
            to_flags = self.plan(flags, preset)
            self._window.check(at)
            with self._gate:
                if self._retired:
                    raise Busy(f"{self.name}: the config was just reloaded; send the request again")
                if not self._lock.acquire(blocking=False):
                    raise Busy(f"a restart of {self.name} is already under way")
            self._recheck_locked(expected_run)
        except RestartRefused as exc:
            self._refused(who, at, to_flags or shown(flags, preset), exc)
            raise
        op = Operation(op_id=new_run_id(at), host=self.name, who=who, requested_at=at,
                       from_flags=self._last_flags(), to_flags=to_flags, run_id="")
        try:
            self._take_lease(op)
        except (RestartRefused, CollectorError) as exc:
            self._lock.release()
            refusal = exc if isinstance(exc, RestartRefused) else HostUnavailable(f"{self.name}: {exc}")
            self._refused(who, at, to_flags, refusal)
            raise refusal from None
        self._window.add(at)
        op.log_path = self._log_path(op.op_id)
        based_on = self._forecasts.before_announce(op)  # while the run that runs now is still the current one
        op.run_id = self.ledger.announce(to_flags, op.log_path, op.op_id)
        self._forecasts.after_announce(op, based_on)
        self.last = op
        self._views.forget()
        self._thread = threading.Thread(target=self._run, args=(op,), name=f"restart-{self.name}", daemon=True)
        self._thread.start()
        for watcher in self.watchers:
            watcher(op)
        return op

    def _recheck_locked(self, expected_run: str | None) -> None:
        """Once locked no other restart can announce a run, so this answer holds until this one does."""
        try:
            self._require_current(expected_run)
        except StaleRun:
            self._lock.release()
            raise

    def wait(self, timeout: float | None = None) -> Operation | None:
        """Block until the current operation has finished (tests, the CLI)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.last

    def inspect_shared(self) -> dict[str, Any]:
        """`inspect` for read-only views: one helper call shared by concurrent callers and reused for
        VIEW_MAX_AGE_S (app/controller/coalesce.py). A restart's own checks call `inspect`."""
        return self._views.get(self.inspect)

    def inspect(self) -> dict[str, Any]:
        """What runs on the host now, from its record (one helper call). Raises CollectorError."""
        launch = self.launch()
        port = int(launch.flags.get("port") or 30000)  # type: ignore[arg-type]
        status = self.remote.status("127.0.0.1", port)
        record = status.get("record") or {}
        return {"run_id": record.get("run_id"), "flags": record.get("flags", launch.flags),
                "running": bool(status.get("ours")), "pid": record.get("pid"), "log_path": record.get("log"),
                "good_flags": (status.get("good") or {}).get("flags")}

    def _take_lease(self, op: Operation) -> None:
        lease_s = self.settings.stop_timeout + 2 * self.settings.ready_timeout + self.reconnect_window + 120
        answer = self.remote.lease(op.op_id, lease_s, this_owner())
        holder = answer.get("holder") or {}
        # Our own, left by an interrupted operation; or a kvwatch on this machine that ended (kill -9)
        # while it restarted: its lease would otherwise hold every restart for about an hour.
        if not answer.get("ok") and (holder.get("op_id") in self._own_ops or ended_here(str(holder.get("owner", "")))):
            self.remote.release(str(holder["op_id"]))
            answer = self.remote.lease(op.op_id, lease_s, this_owner())
        if not answer.get("ok"):
            raise Busy(f"{self.name}: another kvwatch is restarting this host (operation {holder.get('op_id')})")
        self._own_ops.add(op.op_id)

    def _last_flags(self) -> dict[str, FlagValue]:
        if self.last is not None and self.last.outcome == "ok":
            return self.last.to_flags
        return self.launch(self._schema).flags

    def _run(self, op: Operation) -> None:
        try:
            outcome, detail = self._drive(op)
        except Interrupted as exc:
            outcome, detail = "interrupted", str(exc)
        except Exception as exc:
            log.exception("%s: restart %s failed", self.name, op.op_id)
            outcome, detail = "failed", f"{type(exc).__name__}: {exc}"
        self._record(op, outcome, detail)
        if outcome != "interrupted":
            try:
                self.remote.release(op.op_id)
            except CollectorError as exc:
                log.warning("%s: could not release the lease of %s: %s", self.name, op.op_id, exc)
        self._views.forget()
        # The outcome is shown only once the host's lease and this lock are free, in one step under the
        # gate `begin` locks under: whoever sees "done" (a campaign's next step, a person) can restart.
        with self._gate:
            op.outcome, op.detail = outcome, detail
            op.step("done", f"{outcome}: {detail}")
            self._lock.release()

    def _drive(self, op: Operation) -> tuple[Outcome, str]:
        message = self.on_takeover(op) if self.on_takeover is not None else None
        if message:
            self.notice = {"message": message, "at": op.requested_at}
        target = self._target(op.run_id, op.to_flags, op.log_path)
        failure = self._bring_up(op, target)
        if failure is None:
            return "ok", f"run {target.run_id} is up with the new flags"
        good = self._good_flags(op)
        if good == op.to_flags:
            return "failed", f"{failure}; the last good flags are the same, not retried"
        token = new_run_id(self.clock())
        log_path = self._log_path(token)
        rollback = self._target(self.ledger.announce(good, log_path, token), good, log_path)
        op.step("rolling_back", f"{failure}; rolling back to the last good flags as run {rollback.run_id}")
        self._window.add(self.clock())  # counts toward the cap; one rollback per operation, never more
        second = self._bring_up(op, rollback)
        if second is None:
            return "rolled_back", f"{failure}; rolled back: run {rollback.run_id} is up with the last good flags"
        return "failed", f"{failure}; the rollback failed too: {second}"

    def _good_flags(self, op: Operation) -> dict[str, FlagValue]:
        status = self._retrying(op, lambda: self.remote.status("127.0.0.1", 0))
        good = (status.get("good") or {}).get("flags")
        return dict(good) if isinstance(good, dict) else self.launch(self._schema).flags

    def _log_path(self, token: str) -> str:
        """A new log file per start, named by the operation (never by anything a request chose)."""
        return run_log_path(self.config.log_dir, self.name, token)

    def _target(self, run_id: str, flags: dict[str, FlagValue], log_path: str) -> Target:
        schema = self._schema or self.schema()  # the one this request was validated against
        launch = self.launch(schema)
        port = flags.get("port", schema.option("port").default)
        bind = str(flags.get("host", schema.option("host").default) or "127.0.0.1")
        return Target(run_id=run_id, flags=flags, argv=launch.argv(schema, flags), env=launch.env, log=log_path,
                      host="127.0.0.1" if bind in ("0.0.0.0", "::", "") else bind, port=int(port))  # type: ignore[arg-type]

    def _refused(self, who: str, at: float, to_flags: dict[str, FlagValue], exc: RestartRefused) -> None:
        # A stale request is refused without touching the host, its audit record included.
        from_flags = exc.current_flags if isinstance(exc, StaleRun) else self._safe_from()
        self.ledger.audit(RestartRecord(host=self.name, who=who, at=at, from_flags=from_flags,
                                        to_flags=to_flags, outcome=exc.outcome, detail=exc.message))

    def _safe_from(self) -> dict[str, FlagValue]:
        try:
            return self._last_flags()
        except RestartRefused:
            return {}

    def _record(self, op: Operation, outcome: Outcome, detail: str) -> None:
        self.ledger.audit(RestartRecord(host=self.name, who=op.who, at=op.requested_at, from_flags=op.from_flags,
                                        to_flags=op.to_flags, outcome=outcome, detail=detail, run_id=op.run_id,
                                        operation_id=op.op_id))

"""One campaign's state machine on one host. `tick()` moves it at most one transition; the service's
loop calls it every few seconds and keeps the campaign in the store after each.

A step: restart through the controller (its limits, audit and rollback apply) -> the run is up ->
its steady window (the host's minimum) or the step's budget -> measured and scored. A step whose
restart fails (a crash, out of memory, never ready) ends that candidate; the host then goes back to
the best config so far, and the campaign goes on or stops as the plan says. At the end the host is
put on the best config (the config it ran at the start when no candidate could be chosen).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvwatch.app.campaign.measure import better, numbers, score, steady_stats
from kvwatch.app.campaign.model import Campaign, Step
from kvwatch.app.campaign.planner import Predict, current_flags, memory_reason
from kvwatch.app.controller.errors import Busy, RateLimited, RestartRefused
from kvwatch.app.controller.operation import Operation
from kvwatch.app.controller.restart import HostController
from kvwatch.app.diagnosis.accuracy import changes_from
from kvwatch.app.runs.model import Run
from kvwatch.app.store.base import Store
from kvwatch.collectors.base import CollectorError

FindRun = Callable[[str], Run | None]


class Runner:
    def __init__(self, campaign: Campaign, controller: HostController, store: Store, find_run: FindRun,
                 clock: Callable[[], float], predict: Predict | None = None) -> None:
        self.campaign, self.controller, self.store = campaign, controller, store
        self.find_run, self.clock, self.predict = find_run, clock, predict

    @property
    def who(self) -> str:
        return f"campaign {self.campaign.id}"

    def note(self, text: str) -> None:
        self.campaign.note(self.clock(), text)

    def tick(self) -> None:
        c = self.campaign
        if c.state != "running":
            return
        if self.campaign.moving_to is not None:
            self._move()
        elif c.current is not None:
            self._advance(c.steps[c.current])
        elif c.started_at is not None and self.clock() - c.started_at > c.plan.total_budget_s:
            self.finish("the campaign's time budget is spent")
        else:
            self._next()

    # -- steps ---------------------------------------------------------------------------------------
    def _next(self) -> None:
        c = self.campaign
        index = next((i for i, s in enumerate(c.steps) if s.status == "planned"), None)
        if index is None:
            self.finish("every candidate was measured, skipped or failed")
            return
        step = c.steps[index]
        run = self.controller.current_run()
        runs_now = run is not None and run.state == "running" and step.flags == current_flags(self.controller)
        if not runs_now and (why := self._predicted_again(step)) is not None:
            step.status, step.reason = "skipped", why
            self.note(f"step {index + 1} ({step.candidate.name}): skipped before its restart: {why}")
            return
        c.current, step.status, step.started_at, step.reason = index, "running", self.clock(), ""
        if runs_now:
            assert run is not None
            step.phase, step.run_id = "steady", run.id
            self.note(f"step {index + 1} ({step.candidate.name}): the host runs it now, measuring")
            return
        step.phase = "restarting"
        self.note(f"step {index + 1} ({step.candidate.name}): restarting")

    def _predicted_again(self, step: Step) -> str | None:
        """A step planned before the server had logged its KV pool has no KV prediction, so nothing
        skipped it for memory: it is predicted again before its restart, from the run up now. Returns
        why it would run out of memory, or None."""
        if self.predict is None or (step.prediction or {}).get("max_total_num_tokens") is not None:
            return None
        prediction = self.predict(changes_from(current_flags(self.controller), step.flags))
        if prediction.get("max_total_num_tokens") is None:
            return None
        step.prediction = prediction
        self.note(f"{step.candidate.name}: predicted again before its restart "
                  f"({prediction['max_total_num_tokens']:,} KV tokens); it had no KV prediction when planned")
        return memory_reason(prediction, self.campaign.plan.min_free_gib)

    def _advance(self, step: Step) -> None:
        if step.phase == "restarting":
            self._restarting(step)
        elif step.phase == "steady":
            self._steady(step)

    def _begin(self, flags: dict[str, Any]) -> Operation | None:
        """A restart through the controller; None when it must wait (its cap, another restart)."""
        try:
            return self.controller.begin(self.who, flags=dict(flags))
        except (RateLimited, Busy) as exc:
            self.campaign.reason = f"waiting: {exc.message}"
            return None

    def _restarting(self, step: Step) -> None:
        if step.operation_id is None:
            try:
                op = self._begin(step.flags)
            except RestartRefused as exc:
                self._failed(step, exc.message)
                return
            if op is not None:
                step.operation_id, step.run_id, self.campaign.reason = op.op_id, op.run_id, ""
            return
        op = self.controller.last
        if op is None or op.op_id != step.operation_id:
            self._lost(f"the restart of step {self.campaign.current} is not this kvwatch's")
            return
        if op.outcome is None:
            return
        if op.outcome == "ok":
            step.phase = "steady"
            self.note(f"{step.candidate.name}: run {step.run_id} is up; waiting for a steady window")
        else:
            self._failed(step, f"the restart {op.outcome}: {op.detail}")

    def _steady(self, step: Step) -> None:
        run = self.find_run(step.run_id or "")
        if run is None:
            return
        if run.failed_at is not None:
            self._failed(step, f"run {run.id} failed")
            return
        if run.ended_at is not None:  # another start followed it before it was measured
            self._failed(step, f"run {run.id} ended before a steady window")
            return
        if not self._logged_as_asked(step, run):  # the registry took another start's lines for it, for now
            return
        stats = steady_stats(self.store, run, self.campaign.plan.min_steady_s)
        spent = self.clock() - (step.started_at or self.clock()) > self.campaign.plan.step_budget_s
        if not stats.window.ok and not spent:
            return
        note = ""
        if not stats.window.ok:  # the budget is spent: the run's second half stands in for a steady window
            note = f"no steady window within the step's budget ({stats.window.message}): measured over its second half"
            stats = steady_stats(self.store, run, self.campaign.plan.min_steady_s, second_half=True)
        score(step, self.campaign.plan, numbers(run, stats))
        step.reason = "; ".join(x for x in (note, step.reason) if x)
        step.status, step.phase, step.ended_at = "measured", "", self.clock()
        self._step_done(step)

    def _logged_as_asked(self, step: Step, run: Run) -> bool:
        """The run's logged flags agree with what the candidate changes. The run registry gives a
        controller run the first start logged from a few seconds before it was asked for, so a restart
        just after another start is briefly shown with that start's lines."""
        preset = self.controller.config.presets.get(step.candidate.preset or "")
        changed = {**(preset.flags if preset is not None else {}), **step.candidate.flags}
        logged = run.flags
        return all(logged.get(name) == step.flags.get(name, value) for name, value in changed.items()
                   if name in logged and name in step.flags)

    def _failed(self, step: Step, why: str) -> None:
        step.status, step.phase, step.reason, step.ended_at = "failed", "", why, self.clock()
        self._step_done(step)
        if self.campaign.state != "running":
            return
        if self.campaign.plan.on_failure == "stop":
            self.finish(f"step {step.candidate.name} failed and the plan says stop")
        else:
            self._go_to_best("rolling back to the best config so far")

    def _step_done(self, step: Step) -> None:
        c = self.campaign
        self.note(f"{step.candidate.name}: {step.status}" + (f" ({step.reason})" if step.reason else ""))
        best = c.steps[c.best] if c.best is not None else None
        if step.status == "measured" and c.current is not None and better(step, best):
            c.best = c.current
        c.current = None

    # -- moving the host -----------------------------------------------------------------------------
    def _go_to_best(self, why: str) -> None:
        try:
            here = current_flags(self.controller)
        except (RestartRefused, CollectorError) as exc:
            self.stop(f"cannot read what the host runs: {exc}")
            return
        target = self.campaign.best_flags()
        if here != target:
            self.campaign.moving_to, self.campaign.move_op = dict(target), None
            self.note(why)

    def _move(self) -> None:
        assert self.campaign.moving_to is not None
        if self.campaign.move_op is None:
            try:
                op = self._begin(self.campaign.moving_to)
            except RestartRefused as exc:
                self.stop(f"could not put the host back on the best config: {exc.message}")
                return
            if op is not None:
                self.campaign.move_op, self.campaign.reason = op.op_id, ""
            return
        op = self.controller.last
        if op is None or op.op_id != self.campaign.move_op:
            self._lost("the move to the best config is not this kvwatch's")
            return
        if op.outcome is None:
            return
        self.campaign.moving_to, self.campaign.move_op = None, None
        if op.outcome != "ok":
            self.stop(f"could not put the host back on the best config: {op.detail}")
        elif self.campaign.finishing is not None:
            self._done(self.campaign.finishing)

    def finish(self, why: str) -> None:
        """End the campaign on the best config: move there first when the host runs another."""
        self.campaign.finishing = why
        self._go_to_best("moving to the best config")
        if self.campaign.moving_to is None and self.campaign.state == "running":
            self._done(why)

    def _done(self, why: str) -> None:
        c = self.campaign
        c.state, c.reason, c.ended_at, c.finishing = "done", why, self.clock(), None
        c.final_flags = dict(c.best_flags())
        self.note(f"done: {why}")

    def _lost(self, why: str) -> None:
        self.stop(f"{why}; stopped (the host runs its last good config)")

    def recover(self) -> None:
        """After kvwatch itself restarted: a restart this campaign had under way belonged to the process
        that died. The host's record says whether it came up; if it did, the campaign goes on, else it
        stops with the host on the config its record names."""
        c = self.campaign
        if c.state != "running":
            return
        step = c.steps[c.current] if c.current is not None else None
        pending = (step.operation_id if step is not None and step.phase == "restarting" else None) or c.move_op
        if pending is None:
            return
        try:
            now = self.controller.inspect()
        except (RestartRefused, CollectorError) as exc:
            self.stop(f"kvwatch restarted during a restart and cannot read the host: {exc}")
            return
        if step is not None and step.phase == "restarting" and now.get("running") and now.get("run_id") == step.run_id:
            step.phase = "steady"
            self.note(f"kvwatch restarted: run {step.run_id} is up, measuring it")
        elif c.move_op is not None and now.get("running") and now.get("flags") == c.moving_to:
            c.moving_to = c.move_op = None
            if c.finishing is not None:
                self._done(c.finishing)
        else:
            self.stop("kvwatch restarted during a restart that did not come up")

    # -- a person's commands ------------------------------------------------------------------------
    def stop(self, why: str) -> None:
        c = self.campaign
        if c.current is not None:
            step = c.steps[c.current]
            step.status, step.phase, step.reason, step.ended_at = "failed", "", f"stopped: {why}", self.clock()
            c.current = None
        c.moving_to = c.move_op = c.finishing = None
        c.state, c.reason, c.ended_at = "stopped", why, self.clock()
        try:
            c.final_flags = current_flags(self.controller)
        except (RestartRefused, CollectorError):
            c.final_flags = None
        self.note(f"stopped: {why}")

    def pause(self, why: str) -> None:
        """Nothing more happens on the host; a step under way is run again from its restart on resume."""
        c = self.campaign
        if c.state != "running":
            return
        if c.current is not None:
            step = c.steps[c.current]
            step.status, step.phase, step.operation_id, step.run_id, step.started_at = "planned", "", None, None, None
            c.current = None
        c.moving_to = c.move_op = None
        c.state, c.reason = "paused", why
        self.note(f"paused: {why}")

    def resume(self) -> None:
        c = self.campaign
        if c.state in ("paused", "planned"):
            c.state, c.reason = "running", ""
            c.started_at = c.started_at or self.clock()
            self.note("running")
            if self.campaign.finishing is not None:
                self.finish(self.campaign.finishing)

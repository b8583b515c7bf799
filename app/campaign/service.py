"""Campaigns of every host: planned, started, watched, paused, resumed and stopped; kept in the store.

One campaign a host at a time is active (planned, running or paused); a host without a controller
gets none. One loop ticks every running campaign. Each campaign is a store document, written after
every change, so a kvwatch that restarts finds it again: a running one resumes (`Runner.recover`).
A restart that is not the campaign's own (the page, the API, the CLI) pauses it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kvwatch.app.campaign.model import ACTIVE, CAMPAIGN_DOC, Campaign
from kvwatch.app.campaign.planner import Predict, make_campaign, veto_check
from kvwatch.app.campaign.runner import Runner
from kvwatch.app.campaign.settings import plan_from_request
from kvwatch.app.campaign.table import prices, rows
from kvwatch.app.compare.settings import host_min_steady
from kvwatch.app.controller.operation import Operation, new_run_id
from kvwatch.app.controller.restart import HostController
from kvwatch.app.diagnosis.service import predict_host
from kvwatch.app.errors import Conflict, NotFound
from kvwatch.app.flags.schema import Schema
from kvwatch.app.runs.registry import list_runs
from kvwatch.app.store.base import Store
from kvwatch.collectors.periodic import Periodic

if TYPE_CHECKING:
    from kvwatch.app.services import Services

TICK_S = 2.0
log = logging.getLogger(__name__)


def stored_campaigns(store: Store, host: str | None = None) -> list[Campaign]:
    """Every campaign kept in the store (of `host`), oldest first."""
    return [Campaign.from_dict(doc["data"]) for doc in store.documents(CAMPAIGN_DOC, host)]


class CampaignService:
    def __init__(self, services: Services, clock: Callable[[], float] = time.time, tick_s: float = TICK_S) -> None:
        self.services, self.clock = services, clock
        self._lock = threading.RLock()
        self._runners: dict[str, Runner] = {}  # by host: its active campaign
        self._loop = Periodic("campaigns", self.tick, tick_s)
        # Called with the host when a campaign starts, before its first step (the demo stops its scripted
        # story there, as it does for a person's restart: only the campaign drives the server then).
        self.on_start: list[Callable[[str], object]] = []
        self._load()

    @property
    def store(self) -> Store:
        return self.services.store

    # -- lifetime ------------------------------------------------------------------------------------
    def _load(self) -> None:
        for campaign in stored_campaigns(self.store):
            if campaign.state in ACTIVE and campaign.host in self.services.controllers:
                self._runners[campaign.host] = self._runner(campaign, self.services.controllers[campaign.host])
            elif campaign.state in ACTIVE:  # its host lost its controller while kvwatch was down
                campaign.state, campaign.reason = "stopped", "the host has no controller now"
                self._save(campaign)

    def start(self) -> None:
        with self._lock:
            for runner in self._runners.values():
                runner.recover()
                self._save(runner.campaign)
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def tick(self) -> None:
        with self._lock:
            for host, runner in list(self._runners.items()):
                controller = self.services.controllers.get(host)
                if controller is None:
                    runner.campaign.state, runner.campaign.reason = "stopped", "the host has no controller now"
                else:
                    self._watch(controller)
                    runner.controller = controller  # a reload may have replaced it
                    try:
                        runner.tick()
                    except Exception as exc:  # a store or host hiccup: the next tick tries again
                        log.exception("campaign %s on %s: tick failed", runner.campaign.id, host)
                        runner.campaign.reason = f"retrying after: {type(exc).__name__}: {exc}"
                self._finish(runner)

    def _finish(self, runner: Runner) -> None:
        campaign = runner.campaign
        if campaign.state in ("done", "stopped"):
            campaign.prices = prices(campaign)
            self._runners.pop(campaign.host, None)
        self._save(campaign)

    def _save(self, campaign: Campaign) -> None:
        self.store.put_document(CAMPAIGN_DOC, campaign.id, campaign.host, campaign.created_at, campaign.as_dict())

    def _runner(self, campaign: Campaign, controller: HostController) -> Runner:
        return Runner(campaign, controller, self.store, self._find_run(campaign.host), self.clock,
                      self._predictor(controller))

    def _predictor(self, controller: HostController) -> Predict:
        """What-if predictions on the host's running config, the host's vetoes applied. The flag schema
        is asked once, at the first prediction (a remote host's sglang is asked over SSH)."""
        schemas: list[Schema] = []

        def predict(changes: dict[str, Any]) -> dict[str, Any]:
            entry = next(h for h in self.services.config.hosts if h.name == controller.name)
            now = self.services.controllers.get(controller.name, controller)  # a reload may have replaced it
            if not schemas:
                schemas.append(now.schema())
            return predict_host(self.store, entry, changes, vetoes=veto_check(now, schemas[0]))

        return predict

    def _find_run(self, host: str) -> Callable[[str], Any]:
        return lambda run_id: next((r for r in list_runs(self.store, host) if r.id == run_id), None)

    def _watch(self, controller: HostController) -> None:
        if self._person_restarted not in controller.watchers:
            controller.watchers.append(self._person_restarted)

    def _person_restarted(self, op: Operation) -> None:
        with self._lock:
            runner = self._runners.get(op.host)
            if runner is not None and op.who != runner.who and runner.campaign.state == "running":
                runner.pause(f"a person restarted the server ({op.who})")
                self._save(runner.campaign)

    # -- requests ------------------------------------------------------------------------------------
    def controller(self, host: str) -> HostController:
        controller = self.services.controllers.get(host)
        if controller is None:
            raise NotFound(f"no controller for host {host!r}: a campaign restarts the server, so it needs a `launch`")
        return controller

    def plan(self, host: str, table: dict[str, Any] | None, who: str) -> Campaign:
        """A campaign planned from `table` (or the host's `[hosts.campaign]`), every candidate predicted;
        it waits for `start`. Replaces a planned one that was never started."""
        controller = self.controller(host)
        config = self.services.config
        entry = next(h for h in config.hosts if h.name == host)
        data = table or entry.campaign  # an empty body asks for the declared plan
        if data is None:
            raise NotFound(f"host {host!r} declares no [hosts.campaign] plan, and the request gives none")
        plan = plan_from_request(data, f"hosts.{host}.campaign", host_min_steady(config, host))
        with self._lock:
            active = self._runners.get(host)
            if active is not None and active.campaign.state != "planned":
                raise Conflict(f"campaign {active.campaign.id} is {active.campaign.state} on {host}: stop it first")
            now = self.clock()
            campaign = make_campaign(new_run_id(now), controller, plan, self._predictor(controller), now, who)
            if active is not None:
                active.campaign.state, active.campaign.reason = "stopped", f"replaced by campaign {campaign.id}"
                self._save(active.campaign)
            self._runners[host] = self._runner(campaign, controller)
            self._save(campaign)
            return campaign

    def _active(self, host: str, campaign_id: str | None = None) -> Runner:
        self.controller(host)
        runner = self._runners.get(host)
        if runner is None or (campaign_id is not None and runner.campaign.id != campaign_id):
            raise NotFound(f"no active campaign {campaign_id or ''} on host {host!r}".replace("  ", " "))
        return runner

    def confirm(self, host: str, campaign_id: str | None, who: str) -> Campaign:
        """Start the planned campaign (`campaign_id`: the one the person saw)."""
        for hook in self.on_start:
            hook(host)
        return self._command(host, campaign_id, lambda r: r.resume(), ("planned",), f"started by {who}")

    def pause(self, host: str, who: str) -> Campaign:
        return self._command(host, None, lambda r: r.pause(f"paused by {who}"), ("running",), "")

    def resume(self, host: str, who: str) -> Campaign:
        return self._command(host, None, lambda r: r.resume(), ("paused",), f"resumed by {who}")

    def halt(self, host: str, who: str) -> Campaign:
        return self._command(host, None, lambda r: r.stop(f"stopped by {who}"), tuple(ACTIVE), "")

    def _command(self, host: str, campaign_id: str | None, act: Callable[[Runner], None], states: tuple[str, ...],
                 note: str) -> Campaign:
        with self._lock:
            runner = self._active(host, campaign_id)
            if runner.campaign.state not in states:
                raise Conflict(f"campaign {runner.campaign.id} is {runner.campaign.state}")
            if note:
                runner.note(note)
            act(runner)
            self._finish(runner)
        self._loop.wake()
        return runner.campaign

    def status(self, host: str) -> dict[str, Any]:
        """The host's latest campaign with its table; NotFound when it never had one."""
        return view(self.latest(host))

    def latest(self, host: str) -> Campaign:
        """The host's active campaign, else its last one; NotFound when it never had one."""
        self.controller(host)
        with self._lock:
            runner = self._runners.get(host)
            found = [runner.campaign] if runner is not None else stored_campaigns(self.store, host)[-1:]
        if not found:
            raise NotFound(f"no campaign on host {host!r}")
        return found[0]


def view(campaign: Campaign) -> dict[str, Any]:
    return {**campaign.as_dict(), "table": rows(campaign),
            "prices": campaign.prices if campaign.state in ("done", "stopped") else prices(campaign)}


def hosts_view(campaign: Campaign) -> dict[str, Any]:
    """`view` in the words of `GET /api/hosts/{name}/campaign`: each step's `predicted` and
    `skipped_reason`, and `best` as the best measured step's flags and run (None before one)."""
    data = view(campaign)
    steps = [{**step, "predicted": step["prediction"],
              "skipped_reason": step["reason"] if step["status"] == "skipped" else None} for step in data["steps"]]
    best = campaign.steps[campaign.best] if campaign.best is not None else None
    return {**data, "campaign_id": campaign.id, "steps": steps, "best_index": campaign.best,
            "best": {"flags": best.flags if best else None, "run_id": best.run_id if best else None}}

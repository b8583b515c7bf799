"""Every candidate of a plan checked and predicted before any restart.

The controller knows what a request means (launch + preset + flags) and what the owner ruled out (a
veto refuses the candidate with its reason); app/diagnosis predicts KV tokens, concurrency, tok/s
and risks from the running config. A candidate that would run out of memory is skipped too: a
certain or likely out-of-memory risk, or less memory left after CUDA-graph capture than the plan's
`min_free_gib` (the 0.93 of the campaign this tool was made for would have left 5.47 GB and did
not start).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvwatch.app.campaign.model import Campaign, Candidate, Plan, Step
from kvwatch.app.controller.errors import RestartRefused
from kvwatch.app.controller.restart import HostController
from kvwatch.app.controller.running import running_flags
from kvwatch.app.diagnosis.accuracy import changes_from
from kvwatch.app.flags.schema import FlagError, Schema, normalize_one

Predict = Callable[[dict[str, Any]], dict[str, Any]]  # changes on the running config -> prediction
VetoCheck = Callable[[dict[str, Any]], tuple[str, ...]]
SURE_OOM = frozenset({"certain", "likely"})


def current_flags(controller: HostController) -> dict[str, Any]:
    """What the host runs now, in the launch line's terms: the controller's record of its server, else
    the run registry's current run, else the launch line."""
    launch = controller.launch()
    now = controller.inspect()
    # An adopted server's record carries the launch line's flags, not its own: the run registry knows those.
    adopted = str(now.get("run_id") or "").startswith("adopted-")
    if now.get("running") and isinstance(now.get("flags"), dict) and not adopted:
        return dict(now["flags"])
    run = controller.current_run()
    if run is None or run.state not in ("starting", "running"):
        return dict(launch.flags)
    found = running_flags(launch.flags, run.flags, (p.flags for p in controller.config.presets.values()))
    return _restartable(controller.schema(), launch.flags, found)


def _restartable(schema: Schema, launch: dict[str, Any], flags: dict[str, Any]) -> dict[str, Any]:
    """A logged run's flags as a restart takes them: a default the launch line does not set is left out
    (SGLang logs `hicache_size=0` for a run without a host cache), and so is a value the schema refuses."""
    kept: dict[str, Any] = {}
    for name, value in flags.items():
        try:
            if name not in launch and value == schema.option(name).default:
                continue
            canonical, typed = normalize_one(schema, name, value, strict=False)
        except (FlagError, KeyError):
            continue
        kept[canonical] = typed
    return kept


def veto_check(controller: HostController, schema: Schema) -> VetoCheck:
    def check(flags: dict[str, Any]) -> tuple[str, ...]:
        veto = controller.config.veto_for(schema, flags)
        return () if veto is None else (f"--{veto.flag} {veto.value} is vetoed on this host: {veto.reason}",)

    return check


def memory_reason(prediction: dict[str, Any], min_free_gib: float) -> str | None:
    """Why the candidate would run out of memory at start, or None."""
    for risk in prediction.get("risks", []):
        if risk.get("kind") == "oom" and risk.get("severity") in SURE_OOM:
            return str(risk["message"])
    left = prediction.get("left_after_graphs_gib")
    if isinstance(left, int | float) and left < min_free_gib:
        return (f"out-of-memory risk: {left:.2f} GiB would be left after CUDA-graph capture, "
                f"less than the plan's {min_free_gib:g} GiB")
    return None


def plan_step(controller: HostController, candidate: Candidate, start: dict[str, Any], predict: Predict,
              min_free_gib: float) -> Step:
    try:
        flags = controller.plan(candidate.flags or None, candidate.preset)
    except RestartRefused as exc:  # vetoed, or flags the host's sglang does not take
        preset = controller.config.presets.get(candidate.preset or "")
        asked = {**start, **(preset.flags if preset is not None else {}), **candidate.flags}
        prediction = predict(changes_from(start, asked))
        return Step(candidate, {}, prediction, "skipped", exc.message)
    prediction = predict(changes_from(start, dict(flags)))
    step = Step(candidate, dict(flags), prediction)
    if (why := memory_reason(prediction, min_free_gib)) is not None:
        step.status, step.reason = "skipped", why
    elif flags == start:
        step.reason = "the host runs this config now: measured without a restart"
    return step


def make_campaign(campaign_id: str, controller: HostController, plan: Plan, predict: Predict, at: float,
                  who: str) -> Campaign:
    """The ordered plan with a prediction for every candidate; nothing on the host changes."""
    start = current_flags(controller)
    steps = [plan_step(controller, c, start, predict, plan.min_free_gib) for c in plan.candidates]
    return Campaign(campaign_id, controller.name, plan, steps, start, at, who=who)

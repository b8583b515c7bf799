"""One host's diagnosis from a snapshot: the lifecycle verdicts first, then the rules, then advice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvwatch.app.diagnosis.sentence import sentence
from kvwatch.app.diagnosis.snapshot import Signals, Snapshot, signals
from kvwatch.app.diagnosis.suggest import Predictor, suggestions
from kvwatch.app.diagnosis.verdicts import RULES, WARMUP_S, Finding
from kvwatch.app.diagnosis.wording import num
from kvwatch.app.metrics_catalog.names import RUNNING_REQ

VetoCheck = Callable[[dict[str, Any]], tuple[str, ...]]  # flags -> the policy's refusals, as sentences

IDLE_AFTER_S = 120.0  # SGLang logs a batch every few seconds while it has requests, nothing when idle


@dataclass(slots=True)
class Diagnosis:
    verdict: str
    evidence: list[dict[str, Any]]
    suggestions: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    snapshot: Snapshot | None = None
    sentence: str = ""

    def as_dict(self) -> dict[str, Any]:
        snap = self.snapshot
        return {
            "verdict": self.verdict,
            "sentence": self.sentence,
            "evidence": self.evidence,
            "suggestions": self.suggestions,
            "findings": [{"verdict": f.verdict, "evidence": f.evidence} for f in self.findings],
            "run": snap.run_id if snap else None,
            "window": {"from": snap.window_start, "to": snap.as_of, "seconds": snap.duration} if snap else None,
        }


def lifecycle(snapshot: Snapshot, sig: Signals) -> Finding | None:
    """`unknown`, `starting` or `idle` when the run is not (or no longer) serving in this window."""
    if snapshot.run_state == "none":
        return Finding("unknown").add("run", None, "no server start and no samples stored for this host yet")
    if snapshot.run_state == "failed":
        return Finding("unknown").add("run", snapshot.failure, f"run {snapshot.run_id} failed "
                                      f"({snapshot.failure or 'error'}); no server is serving")
    if snapshot.ready_at is None:
        return Finding("starting").add("ready", None, f"run {snapshot.run_id} started, not ready yet "
                                       "(loading weights, sizing the KV pool, capturing CUDA graphs)")
    since_ready = snapshot.as_of - snapshot.ready_at
    if since_ready < WARMUP_S:
        return Finding("starting").add("ready", since_ready, f"ready {since_ready:.0f} s ago: the first "
                                       f"{WARMUP_S:.0f} s are the admission burst, not the steady state")
    silent = snapshot.as_of - sig.last_sample_t if sig.last_sample_t is not None else None
    if sig.samples == 0 or (silent is not None and silent > IDLE_AFTER_S):
        what = f"no batch logged for {silent:.0f} s" if silent is not None else "no batch logged in the window"
        return Finding("idle").add(RUNNING_REQ, 0.0, what + ": SGLang logs batches only while it has requests")
    if not sig.running_p50 and not sig.queue_p50:
        return Finding("idle").add(RUNNING_REQ, sig.running_p50, "running median 0, no queue")
    return None


def findings_of(snapshot: Snapshot, sig: Signals) -> list[Finding]:
    """The lifecycle's finding, else every rule's that fits, else `unknown`; the first is the verdict."""
    first = lifecycle(snapshot, sig)
    findings = [first] if first is not None else [f for rule in RULES if (f := rule(snapshot, sig)) is not None]
    if not findings:
        findings = [Finding("unknown").add(RUNNING_REQ, sig.running_p50, (
            f"none of the patterns fits: usage median {num(sig.usage_p50, '.2f')}, running {num(sig.running_p50)}, "
            f"queue p90 {num(sig.queue_p90)}"))]
    return findings


def verdict_of(snapshot: Snapshot) -> str:
    """`diagnose(snapshot).verdict` without the advice (which may ask a predictor)."""
    return findings_of(snapshot, signals(snapshot))[0].verdict


def diagnose(snapshot: Snapshot, predictor: Predictor | None = None, vetoes: VetoCheck | None = None) -> Diagnosis:
    sig = signals(snapshot)
    findings = findings_of(snapshot, sig)
    top = findings[0]
    advice = suggestions(top.verdict, snapshot, sig, predictor)
    if vetoes is not None:  # a vetoed value is never advised: the owner ruled it out
        advice = [a for a in advice if not a.get("flags") or not vetoes(a["flags"])]
    return Diagnosis(top.verdict, top.evidence, advice, findings, snapshot,
                     sentence(top.verdict, top.evidence, sig))

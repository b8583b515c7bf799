"""GET /api/hosts/{name}/diagnosis and POST /api/hosts/{name}/predict: read-only, no token.

    GET  /api/hosts/{name}/predictions         every prediction kept with a restart's run, what the run then
         measured, the relative errors and their mean per metric (this tool's accuracy on the host)
    GET  /api/hosts/{name}/diagnosis[?run=ID]  {"verdict", "sentence", "evidence", "suggestions", "findings", "run",
         "window"}
    POST /api/hosts/{name}/predict             {"flags": {...}} on top of the running config ->
         {"max_total_num_tokens", "running_req", "gen_throughput", "queue_req", "risks", "basis", "run"}
         404 unknown host · 422 unknown flag or bad value (the flag schema's own validation) ·
         403 cross-site (same origin rule as restart) · 413/429 the app's body and rate limits
Predict changes nothing; flags are checked against the bundled schema of the newest SGLang known, or,
on a host whose runs log vLLM's startup lines, against the few vLLM flags the model knows (vllm_flags.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, ConfigDict

from kvwatch.app.api.deps import ServicesDep, require_host
from kvwatch.app.api.restart import require_same_origin
from kvwatch.app.config import HostConfig
from kvwatch.app.diagnosis import diagnose_host, predict_host
from kvwatch.app.diagnosis.accuracy import host_predictions
from kvwatch.app.diagnosis.diagnose import VetoCheck
from kvwatch.app.diagnosis.service import host_engine
from kvwatch.app.diagnosis.vllm_flags import normalize_vllm
from kvwatch.app.flags.schema import Schema, bundled_versions, load_bundled, normalize
from kvwatch.app.services import Services

router = APIRouter(tags=["diagnosis"])
# POST only to carry a body: it changes nothing, so no token; the origin, size and rate bounds hold.
READ_ONLY_POSTS = frozenset({"/api/hosts/{name}/predict", "/api/hosts/{name}/restart/check"})


class PredictBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flags: dict[str, Any]


def _host(services: Services, name: str) -> HostConfig:
    require_host(services, name)
    return next(h for h in services.config.hosts if h.name == name)


def _schema() -> Schema:
    """The newest bundled SGLang schema (by version number, not by text: 0.5.23 is after 0.5.3)."""
    def key(version: str) -> tuple[int, ...]:
        return tuple(int(part) for part in version.split(".") if part.isdigit())

    return load_bundled(max(bundled_versions(), key=key))


def _vetoes(services: Services, name: str, schema: Schema) -> VetoCheck:
    controller = services.controllers.get(name)

    def check(flags: dict[str, Any]) -> tuple[str, ...]:
        veto = controller.config.veto_for(schema, flags) if controller is not None else None
        return () if veto is None else (f"--{veto.flag} {veto.value} is vetoed on this host: {veto.reason}",)

    return check


@router.get("/api/hosts/{name}/diagnosis")
def get_diagnosis(name: str, services: ServicesDep, run: str | None = None) -> dict[str, Any]:
    """What limits the host's run now, with the numbers behind it and what to change."""
    host = _host(services, name)
    found = diagnose_host(services.store, host, run_id=run, vetoes=_vetoes(services, name, _schema()))
    return found.as_dict()


@router.post("/api/hosts/{name}/predict", dependencies=[Depends(require_same_origin)])
def post_predict(name: str, body: PredictBody, services: ServicesDep) -> dict[str, Any]:
    """KV tokens, concurrency and throughput of the running config with `flags` changed; changes nothing."""
    host = _host(services, name)
    schema = _schema()
    if host_engine(services.store, name) == "vllm":  # vLLM's own flag names and ranges
        vllm_changes, problems = normalize_vllm(dict(body.flags))
        if problems:
            raise HTTPException(422, detail={"message": "invalid flags", "errors": problems})
        return predict_host(services.store, host, vllm_changes)
    changes, errors = normalize(schema, dict(body.flags), strict=True)
    if errors:
        raise HTTPException(422, detail={"message": "invalid flags", "errors": [
            {"flag": e.flag, "message": e.message} for e in errors]})
    return predict_host(services.store, host, dict(changes), vetoes=_vetoes(services, name, schema))


@router.get("/api/hosts/{name}/predictions")
def get_predictions(name: str, services: ServicesDep) -> dict[str, Any]:
    """Predictions made for restarts, next to what each new run measured, and the errors."""
    _host(services, name)
    return host_predictions(services.store, name)

"""Restart a host's SGLang server, and what the restart panel reads.

    POST /api/hosts/{name}/restart   {"flags": {...}} and/or {"preset": "..."}, optional "expected_run", Bearer token
         202 {"run_id", "operation_id", "status_url"} · 401 no/wrong token · 403 cross-site or vetoed
         404 unknown host, or no `launch` (the detail says which) · 409 busy, or `expected_run` is not the current run
         ({"detail", "current_run"}; nothing runs) · 422 invalid (nothing runs) · 429 restart-loop cap
         503 the host cannot be asked
    GET  /api/hosts/{name}/restart     progress of the current or last restart (the panel polls it)
    GET  /api/hosts/{name}/controller  launch flags, presets, vetoes, what runs now and the current run
    GET  /api/hosts/{name}/flags       every flag of the host's sglang, with defaults and choices

Dependencies come from `create_app` through app.state (read by `get_controller_service`):
    app.state.services.controllers   hosts that have a `launch`, read per request (a reload swaps them);
                                     an app given `app.state.controllers` (tests) uses those instead
    app.state.api_token: str | None  [server] token, else env KVWATCH_TOKEN
No token configured means restarts are refused (401): a mutating endpoint is never open.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, ConfigDict
from starlette.datastructures import State

from kvwatch.app.controller.errors import RestartRefused
from kvwatch.app.controller.restart import HostController
from kvwatch.app.controller.running import running_flags
from kvwatch.app.flags.argv import Launch
from kvwatch.app.services import Services
from kvwatch.collectors.base import CollectorError
from kvwatch.parsers.secrets import redact_mapping

router = APIRouter(tags=["controller"])
DEFAULT_PORTS = {"http": 80, "https": 443}


class RestartBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flags: dict[str, Any] | None = None
    preset: str | None = None
    # The run id the requester decided on (the page sends the one it shows); another run now -> 409.
    expected_run: str | None = None


class StaleRunAnswer(BaseModel):
    detail: str
    current_run: str | None


class RestartAccepted(BaseModel):
    run_id: str
    operation_id: str
    status_url: str


@dataclass(frozen=True, slots=True)
class ControllerService:
    controllers: Mapping[str, HostController]
    token: str | None
    hosts: frozenset[str] | None = None  # the configured hosts, when known: the 404 then says which case

    def host(self, name: str) -> HostController:
        controller = self.controllers.get(name)
        if controller is None:
            raise HTTPException(404, detail=f"no controller for host {name!r}: {self._why_none(name)}")
        return controller

    def _why_none(self, name: str) -> str:
        if self.hosts is None:
            return "unknown host, or no `launch`"
        if name in self.hosts:
            return "its [[hosts]] table has no `launch`, so kvwatch does not restart it"
        return f"no such host in kvwatch.toml (hosts: {', '.join(sorted(self.hosts)) or 'none'})"


def live_controllers(state: State) -> Mapping[str, HostController]:
    """The controllers as of now: set on the app itself, else its services' (one read of the set)."""
    given: Mapping[str, HostController] | None = getattr(state, "controllers", None)
    if given is not None:
        return given
    services: Services | None = getattr(state, "services", None)
    return services.controllers if services is not None else {}


def get_controller_service(request: Request) -> ControllerService:
    state = request.app.state
    token = getattr(state, "api_token", None) or os.environ.get("KVWATCH_TOKEN") or None
    services: Services | None = getattr(state, "services", None)
    if getattr(state, "controllers", None) is not None or services is None:  # set on the app: hosts unknown
        return ControllerService(controllers=live_controllers(state), token=token)
    registries = services.registries  # one read: the controllers and the hosts of the same config
    hosts = frozenset(h.name for h in registries.config.hosts)
    return ControllerService(controllers=registries.controllers, token=token, hosts=hosts)


ServiceDep = Annotated[ControllerService, Depends(get_controller_service)]


def require_token(request: Request, service: ServiceDep) -> None:
    """Bearer token, compared in constant time."""
    if not service.token:
        raise HTTPException(401, headers={"WWW-Authenticate": "Bearer"},
                            detail="changes (restarts, alert acknowledgements and mutes) are disabled: "
                                   "no API token configured (KVWATCH_TOKEN)")
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), service.token.encode()):
        raise HTTPException(401, detail="missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})


def require_same_origin(request: Request) -> None:
    """A browser's cross-site request is refused even with a token: Origin must name this server."""
    origin = request.headers.get("origin")
    if origin is None:
        if request.headers.get("sec-fetch-site") == "cross-site":
            raise HTTPException(403, detail="cross-site request refused")
        return
    host = request.headers.get("host", "")
    if origin == "null" or _authority(origin) != _authority(f"{request.url.scheme}://{host}"):
        raise HTTPException(403, detail=f"cross-site request refused (Origin {origin!r} is not {host!r})")


def _authority(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with default ports filled in, the parts an origin is made of."""
    try:
        parts = urlsplit(url)
        return parts.scheme, (parts.hostname or "").lower(), parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return ("", "", None)


@router.post("/api/hosts/{name}/restart", status_code=202, response_model=RestartAccepted,
             responses={409: {"model": StaleRunAnswer, "description": "busy, or `expected_run` is stale"}},
             dependencies=[Depends(require_token), Depends(require_same_origin)])
def restart_host(name: str, body: RestartBody, request: Request, service: ServiceDep) -> RestartAccepted:
    """Restart the host's server with launch flags + preset + flags; 202 once the restart is under way."""
    controller = service.host(name)
    if body.flags is None and body.preset is None:
        raise HTTPException(422, detail="give `flags`, `preset`, or both")
    who = f"api {request.client.host if request.client else '?'}"
    op = controller.begin(who, flags=body.flags, preset=body.preset, expected_run=body.expected_run)
    return RestartAccepted(run_id=op.run_id, operation_id=op.op_id, status_url=f"/api/hosts/{name}/restart")


@router.get("/api/hosts/{name}/restart")
def restart_status(name: str, service: ServiceDep) -> dict[str, Any]:
    """Progress of the current or last restart: state, steps, outcome, log tail."""
    controller = service.host(name)
    last = controller.last.public() if controller.last is not None else None
    return {"host": name, "busy": controller.busy, "operation": last}


@router.get("/api/hosts/{name}/controller")
def controller_view(name: str, service: ServiceDep) -> dict[str, Any]:
    """What the restart panel shows: launch, presets, vetoes, and the flags the server runs with now."""
    controller = service.host(name)
    try:
        launch = controller.launch()
        now: dict[str, Any] | None = controller.inspect_shared()
        error = None
    except (RestartRefused, CollectorError) as exc:
        launch, now, error = None, None, str(exc)
    config = controller.config
    # Unauthenticated: a secret of the launch line or of the running server (--api-key) is never shown.
    return redact_mapping({
        "host": name, "busy": controller.busy, "error": error,
        "launch": None if launch is None else {"program": list(launch.program), "flags": launch.flags},
        "presets": [{"name": name, "description": p.description, "flags": p.flags}
                    for name, p in config.presets.items()],
        "vetoes": [{"flag": v.flag, "value": v.value, "reason": v.reason} for v in config.vetoes],
        "current": now,
        "run": _run_view(controller),
        "running_flags": _running_flags(controller, launch, now),
        "notice": controller.notice,  # {"message", "at"}: e.g. the demo's story stopped for a person's restart
    })


def _running_flags(
    controller: HostController, launch: Launch | None, now: dict[str, Any] | None
) -> dict[str, Any] | None:
    """A server the controller does not run (its record absent or not running) that the run registry
    sees up: its flags in the launch line's terms (app.controller.running), for the panel's diff."""
    if launch is None or (now is not None and now.get("running")):
        return None
    run = controller.current_run()
    if run is None or run.state not in ("starting", "running"):
        return None
    return running_flags(launch.flags, run.flags, (p.flags for p in controller.config.presets.values()))


def _run_view(controller: HostController) -> dict[str, Any] | None:
    """The current run as GET /api/runs has it: the page sends its id as `expected_run` and diffs its
    flags against the edited ones (`current` is the host's own record, absent for runs kvwatch did not start)."""
    run = controller.current_run()
    if run is None:
        return None
    return {"id": run.id, "flags": run.flags, "started_at": run.started_at, "state": run.state, "source": run.source}


@router.get("/api/hosts/{name}/flags")
def flag_schema(name: str, service: ServiceDep) -> dict[str, Any]:
    """Every flag of the host's sglang version (for the editor's names, defaults and choices)."""
    controller = service.host(name)
    schema = controller.schema()
    return {"host": name, "sglang": schema.version, "options": [o.public() for o in schema.options]}

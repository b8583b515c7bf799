"""A host's tuning campaign (app/campaign): plan it, start it, watch it, pause, resume or stop it.

    POST /api/campaign/{host}/plan     optional body: the plan, `[hosts.campaign]`'s keys (else the config's);
         every candidate predicted, vetoed and out-of-memory ones skipped with the reason; nothing restarts
    POST /api/campaign/{host}/start    {"campaign": id of the planned campaign the person confirms}
    POST /api/campaign/{host}/pause | resume | stop
    GET  /api/campaign/{host}          the latest campaign: state, steps (predicted vs measured), table, prices
The same under the host's own path, in one request each:
    POST   /api/hosts/{name}/campaign  the plan (`candidates`, or [hosts.campaign]'s keys; none: the
           config's) planned and started at once -> 202 {"campaign_id", ...}; the token is the consent
    GET    /api/hosts/{name}/campaign  {"state", "steps": [{"flags", "predicted", "measured",
           "skipped_reason", "run_id", ...}], "best": {"flags", "run_id"}, ...}
    DELETE /api/hosts/{name}/campaign  stop it (the host is moved to the best config so far)
Every POST needs the control token and the same origin, as a restart does; refusals are domain errors
(NotFound: no controller, no campaign; Conflict: one campaign a host) answered by app/api/errors.py.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Request

from kvwatch.app.api.deps import ServicesDep, require_host
from kvwatch.app.api.restart import require_same_origin, require_token
from kvwatch.app.campaign.service import CampaignService, hosts_view, view
from kvwatch.app.errors import NotFound
from kvwatch.app.services import Services

router = APIRouter(tags=["campaign"])
OptionalBody = Annotated[dict[str, Any] | None, Body()]
GUARDED = [Depends(require_token), Depends(require_same_origin)]


def _campaigns(services: Services, host: str) -> CampaignService:
    require_host(services, host)
    if services.campaigns is None:
        raise NotFound("this kvwatch runs no controllers, so no campaigns")
    return services.campaigns


def _who(request: Request) -> str:
    return f"api {request.client.host if request.client else '?'}"


@router.get("/api/campaign/{host}")
def campaign_status(host: str, services: ServicesDep) -> dict[str, Any]:
    return _campaigns(services, host).status(host)


@router.post("/api/campaign/{host}/plan", dependencies=GUARDED)
def campaign_plan(host: str, services: ServicesDep, request: Request,
                  plan: OptionalBody = None) -> dict[str, Any]:
    return view(_campaigns(services, host).plan(host, plan, _who(request)))


@router.post("/api/campaign/{host}/start", dependencies=GUARDED)
def campaign_start(host: str, services: ServicesDep, request: Request,
                   body: OptionalBody = None) -> dict[str, Any]:
    wanted = (body or {}).get("campaign")
    return view(_campaigns(services, host).confirm(host, str(wanted) if wanted else None, _who(request)))


@router.post("/api/campaign/{host}/pause", dependencies=GUARDED)
def campaign_pause(host: str, services: ServicesDep, request: Request) -> dict[str, Any]:
    return view(_campaigns(services, host).pause(host, _who(request)))


@router.post("/api/campaign/{host}/resume", dependencies=GUARDED)
def campaign_resume(host: str, services: ServicesDep, request: Request) -> dict[str, Any]:
    return view(_campaigns(services, host).resume(host, _who(request)))


@router.post("/api/campaign/{host}/stop", dependencies=GUARDED)
def campaign_stop(host: str, services: ServicesDep, request: Request) -> dict[str, Any]:
    return view(_campaigns(services, host).halt(host, _who(request)))


@router.post("/api/hosts/{name}/campaign", status_code=202, dependencies=GUARDED)
def start_host_campaign(name: str, services: ServicesDep, request: Request,
                        plan: OptionalBody = None) -> dict[str, Any]:
    campaigns = _campaigns(services, name)
    planned = campaigns.plan(name, plan, _who(request))
    return hosts_view(campaigns.confirm(name, planned.id, _who(request)))


@router.get("/api/hosts/{name}/campaign")
def host_campaign(name: str, services: ServicesDep) -> dict[str, Any]:
    return hosts_view(_campaigns(services, name).latest(name))


@router.delete("/api/hosts/{name}/campaign", dependencies=GUARDED)
def stop_host_campaign(name: str, services: ServicesDep, request: Request) -> dict[str, Any]:
    return hosts_view(_campaigns(services, name).halt(name, _who(request)))

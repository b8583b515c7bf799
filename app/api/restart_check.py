"""POST /api/hosts/{name}/restart/check: a restart request's problems, per flag, before confirming.

    POST /api/hosts/{name}/restart/check   the restart's body ({"flags"} and/or {"preset"}) ->
         {"ok", "problems": [{"flag", "kind", "message"}]}   kind: invalid | guarded | vetoed
         404 no controller for the host · 403 cross-site · 503 the host's flags cannot be read
A dry run of the restart's own checks (the same schema, exposure guard, ranges and vetoes): it
changes nothing and needs no token, so the editor can mark a refused value while it is typed.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict

from kvwatch.app.api.restart import ServiceDep, require_same_origin
from kvwatch.app.controller.errors import InvalidFlags

router = APIRouter(tags=["controller"])
CHECK_PATH = "/api/hosts/{name}/restart/check"


class CheckBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flags: dict[str, Any] | None = None
    preset: str | None = None


@router.post(CHECK_PATH, dependencies=[Depends(require_same_origin)])
def check_restart(name: str, body: CheckBody, service: ServiceDep) -> dict[str, Any]:
    """What a restart with this body would be refused for, flag by flag; nothing runs."""
    controller = service.host(name)
    try:
        problems = [p.public() for p in controller.problems(body.flags, body.preset)]
    except InvalidFlags as exc:  # the host's own launch line does not parse: every request would fail
        problems = [{"flag": e.flag, "kind": "invalid", "message": e.message} for e in exc.errors]
    return {"ok": not problems, "problems": problems}

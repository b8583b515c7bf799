"""Domain errors as HTTP answers, chosen in one place: routes let the domain's errors through and
these registered handlers pick the status code, headers and body.

    NotFound           404  an unknown run (or what else a request names that does not exist)
    Conflict           409  what is asked does not fit the present state (an alert that is not open)
    KvwatchError       422  any other problem with what was asked (a bad window, a run with no data)
    StoreUnavailable   503  Retry-After: 5 (a PostgreSQL restart; the page retries)
    RestartRefused     by its kind, `REFUSAL_STATUS` (the restart controller's refusals)
Starlette picks the handler of the most specific class, so the order of registration does not matter.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from kvwatch.app.controller.errors import (
    Busy,
    HostUnavailable,
    InvalidFlags,
    RateLimited,
    RestartRefused,
    StaleRun,
    Vetoed,
)
from kvwatch.app.errors import Conflict, KvwatchError, NotFound, StoreUnavailable

# Most specific first: the first class an error is an instance of decides.
REFUSAL_STATUS: tuple[tuple[type[RestartRefused], int], ...] = (
    (InvalidFlags, 422),
    (Vetoed, 403),
    (StaleRun, 409),
    (Busy, 409),
    (RateLimited, 429),
    (HostUnavailable, 503),
    (RestartRefused, 400),
)


def refusal_status(exc: RestartRefused) -> int:
    return next(status for kind, status in REFUSAL_STATUS if isinstance(exc, kind))


def _refusal_detail(exc: RestartRefused) -> Any:
    if isinstance(exc, InvalidFlags):
        return {"message": exc.message, "errors": [{"flag": e.flag, "message": e.message} for e in exc.errors]}
    return exc.message


async def restart_refused(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RestartRefused)
    body: dict[str, Any] = {"detail": _refusal_detail(exc)}
    headers: dict[str, str] = {}
    if isinstance(exc, StaleRun):
        body["current_run"] = exc.current  # the page shows which run the host is on now
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(int(exc.retry_after) + 1)
    return JSONResponse(body, status_code=refusal_status(exc), headers=headers)


async def store_unavailable(_: Request, exc: Exception) -> JSONResponse:
    """A store that cannot be reached now (a PostgreSQL restart) is 503, not a 500 with a traceback."""
    return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "5"})


async def not_found(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=404)


async def conflict(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=409)


async def cannot_answer(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=422)


def register_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(NotFound, not_found)
    app.add_exception_handler(Conflict, conflict)
    app.add_exception_handler(KvwatchError, cannot_answer)
    app.add_exception_handler(StoreUnavailable, store_unavailable)
    app.add_exception_handler(RestartRefused, restart_refused)

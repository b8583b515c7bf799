"""The tools and resources, registered on an MCPServer. Each reads the kvwatch API through the `Api`
its caller's `Backend` gives (stdio: the configured URL and token; mounted: this app, with the MCP
request's own Authorization), and answers a view from shape.py; a refusal is a ToolError sentence."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import quote

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from kvwatch.app.mcp import shape
from kvwatch.app.mcp.api import Api, ApiFailure
from kvwatch.app.mcp.waiting import host_status, wait_for
from kvwatch.app.terminal.conditions import USAGE, parse_condition

Backend = Callable[[Context | None], Api]
T = TypeVar("T")
MAX_WAIT_S = 3600.0
SERIES_WINDOW_S = 600.0
SERIES_POINTS = 60


def _host(name: str) -> str:
    return quote(name, safe="")


async def _asked(call: Awaitable[T]) -> T:
    try:
        return await call
    except ApiFailure as exc:
        raise ToolError(str(exc)) from None


async def _campaign_post(api: Api, host: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST one campaign action (plan, start, pause, resume, stop); the campaign as the tools show it."""
    return shape.campaign_view(await _asked(api.post(f"/api/campaign/{_host(host)}/{action}", body)))


async def _verdict(api: Api, host: str) -> str | None:
    try:
        found = await api.get(f"/api/hosts/{_host(host)}/diagnosis")
    except ApiFailure:
        return None  # a status without a verdict is still worth an answer
    return found.get("verdict") if isinstance(found, dict) else None


def register_watching(server: MCPServer, backend: Backend) -> None:
    """hosts, status, wait: where the runs stand; they change nothing."""

    @server.tool(description=(
        "List every host kvwatch watches: name, whether its collector is up, the current server run and its "
        "state, the diagnosis verdict and open alerts. Call it first to learn the host names."))
    async def hosts(ctx: Context) -> dict[str, Any]:
        api = backend(ctx)
        rows = []
        for host in await _asked(api.get("/api/hosts")):
            name = str(host.get("name"))
            status = await _asked(host_status(api, name))
            rows.append(shape.host_row(host, status, await _verdict(api, name)))
        return shape.fit({"hosts": rows})

    @server.tool(description=(
        "One host now: throughput, KV usage, running and queued requests, completions and their rate, each "
        "{value, unit, sampled_at}; `as_of` (epoch s); the run's NON-DEFAULT flags; ETA and alerts. Use it "
        "instead of tailing logs; use `wait` rather than calling it in a loop."))
    async def status(host: str, ctx: Context) -> dict[str, Any]:
        api = backend(ctx)
        answer = await _asked(host_status(api, host))
        return shape.fit(shape.status_view(answer, await _verdict(api, host)))

    @server.tool(description=(
        f"Block until a host's condition holds, then return its status (as `status`). until: {USAGE}. "
        "steady: the current run settled and compare can fill its row; ready: the server is ready. Gives up "
        f"after `timeout` seconds (max {MAX_WAIT_S:g}) and answers met=false with where things stood. Sends "
        "progress notifications while it waits. Use it instead of sleeping."))
    async def wait(host: str, until: str, ctx: Context, timeout: float = 300.0) -> dict[str, Any]:
        try:
            want = parse_condition(until)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        if not 0 <= timeout <= MAX_WAIT_S:
            raise ToolError(f"timeout: give 0 to {MAX_WAIT_S:g} seconds, not {timeout:g}")
        api = backend(ctx)
        outcome = await _asked(wait_for(api, host, want, timeout, ctx.report_progress))
        view = shape.status_view(outcome.status, await _verdict(api, host))
        return shape.fit({"met": outcome.met, "until": str(want), "waited_s": round(outcome.waited_s, 1),
                          "note": outcome.note, **view})



def register_deciding(server: MCPServer, backend: Backend) -> None:
    """diagnose, predict, compare: what to change, and what a change cost; they change nothing."""

    @server.tool(description=(
        "What limits the host's current run now: a verdict (kv_bound, client_bound, concurrency_capped, "
        "prefill_bound, retracting, degraded, hicache_idle, client_stalled, client_buffered, starting, idle, "
        "unknown), its sentence, the evidence with numbers, and suggested flag changes. Use before deciding a "
        "restart."))
    async def diagnose(host: str, ctx: Context) -> dict[str, Any]:
        found = await _asked(backend(ctx).get(f"/api/hosts/{_host(host)}/diagnosis"))
        return shape.fit(shape.diagnosis_view(found))

    @server.tool(description=(
        "Predict KV tokens (max_total_num_tokens), concurrency, throughput and queue if the running config "
        "were restarted with `flags` changed, e.g. {\"mem-fraction-static\": 0.85}; with the risks and the basis "
        "of each number. Changes nothing. Use before `restart` to choose flags."))
    async def predict(host: str, flags: dict[str, Any], ctx: Context) -> dict[str, Any]:
        found = await _asked(backend(ctx).post(f"/api/hosts/{_host(host)}/predict", {"flags": flags}))
        return shape.fit(shape.prediction_view(found))

    @server.tool(description=(
        "Compare runs of a host on their steady state: per metric the steady median and the change vs the "
        "first run, the flags that differ, and `price`: one sentence per run saying what its config choice "
        "cost or bought. Give `runs` (ids) or `last` (the host's last N runs, default 2)."))
    async def compare(host: str, ctx: Context, runs: list[str] | None = None, last: int = 2) -> dict[str, Any]:
        api = backend(ctx)
        if not runs:
            if last < 2:
                raise ToolError("last: compare needs at least 2 runs")
            runs = shape.last_run_ids(await _asked(api.get("/api/runs", {"host": host})), last)
        if len(runs) < 2:
            raise ToolError(f"host {host!r} has {len(runs)} run(s): compare needs at least 2")
        result = await _asked(api.get("/api/compare", {"runs": ",".join(runs)}))
        return shape.fit(shape.comparison_view(result))


def register_restart(server: MCPServer, backend: Backend) -> None:
    """Only for a server started with a control token: the one tool that changes something."""

    @server.tool(description=(
        "Restart a host's SGLang server with `flags` changed on top of its launch line, and/or a named "
        "`preset`. `expected_run` must be the run you decided on (from `status`): another run now refuses it. "
        "Refused with the page's validation, vetoes and restart limits; the refusal says why. Returns the new "
        "run id; then `wait` until ready."))
    async def restart(host: str, expected_run: str, ctx: Context, flags: dict[str, Any] | None = None,
                      preset: str | None = None) -> dict[str, Any]:
        if flags is None and preset is None:
            raise ToolError("give `flags`, `preset`, or both")
        body = {"flags": flags, "preset": preset, "expected_run": expected_run}
        answer = await _asked(backend(ctx).post(f"/api/hosts/{_host(host)}/restart",
                                                {k: v for k, v in body.items() if v is not None}))
        return {"accepted": True, "run_id": answer.get("run_id"), "operation_id": answer.get("operation_id"),
                "next": f"wait(host={host!r}, until='ready') for the new server"}


def register_campaign_status(server: MCPServer, backend: Backend) -> None:
    @server.tool(description=(
        "A host's tuning campaign (kvwatch restarts the server through candidate configs on the live job and "
        "measures each on its steady state): state, the step under way, a table of every step (predicted "
        "against measured KV tokens, concurrency and tok/s; skipped ones with the reason) and the price "
        "sentences. Refused with a sentence when the host never had one."))
    async def campaign_status(host: str, ctx: Context) -> dict[str, Any]:
        return shape.campaign_view(await _asked(backend(ctx).get(f"/api/campaign/{_host(host)}")))


def register_campaign_control(server: MCPServer, backend: Backend) -> None:
    """Only for a server started with a control token, like `restart`."""

    @server.tool(description=(
        "Plan a tuning campaign on a host: `plan` holds [hosts.campaign]'s keys (`presets`, or `lever` with "
        "`values`, or `grid`; `objective`, `max_queue`, `max_usage`, budgets), or leave it out to use the "
        "host's configured plan. Predicts every candidate and skips vetoed and out-of-memory ones; restarts "
        "nothing. Returns the campaign (its id and table); then `campaign_start` to carry it out."))
    async def campaign_plan(host: str, ctx: Context, plan: dict[str, Any] | None = None) -> dict[str, Any]:
        return await _campaign_post(backend(ctx), host, "plan", plan or {})

    @server.tool(description=(
        "Start the planned campaign on a host (`campaign`: its id from `campaign_plan`). kvwatch restarts the "
        "server through each candidate, with the controller's validation, vetoes and limits; follow it with "
        "`campaign_status` or `wait`."))
    async def campaign_start(host: str, ctx: Context, campaign: str | None = None) -> dict[str, Any]:
        body = {"campaign": campaign} if campaign else {}
        return await _campaign_post(backend(ctx), host, "start", body)

    @server.tool(description=(
        "Pause, resume or stop a host's campaign (`action`): pause and stop leave the host on a known config "
        "(stop: the best so far)."))
    async def campaign_control(host: str, action: str, ctx: Context) -> dict[str, Any]:
        if action not in ("pause", "resume", "stop"):
            raise ToolError("`action` is one of pause, resume, stop")
        return await _campaign_post(backend(ctx), host, action, {})


def register_resources(server: MCPServer, backend: Backend) -> None:
    @server.resource("kvwatch://runs/{run_id}/report", mime_type="text/markdown", description=(
        "A run's report in Markdown: its non-default flags, times, steady window, its steady statistics "
        "table and the diagnosis of it."))
    async def run_report(run_id: str, ctx: Context) -> str:
        return await _report(backend(ctx), run_id)

    @server.resource("kvwatch://hosts/{host}/series/{metric}", mime_type="application/json", description=(
        f"A host metric's last {SERIES_WINDOW_S / 60:g} minutes, at most {SERIES_POINTS} points [epoch s, "
        "value] (min/max kept), with its unit."))
    async def series(host: str, metric: str, ctx: Context) -> str:
        params = {"host": host, "metric": metric, "since": time.time() - SERIES_WINDOW_S,
                  "max_points": SERIES_POINTS}
        try:
            answer = await backend(ctx).get("/api/series", params)
        except ApiFailure as exc:
            raise ResourceError(str(exc)) from None
        return json.dumps(shape.series_window(metric, answer.get("points") or []), separators=(",", ":"))


async def _report(api: Api, run_id: str) -> str:
    try:
        steady = await api.get(f"/api/runs/{quote(run_id, safe='')}/steady")
        host = str(steady["host"])
        run: dict[str, Any] = next((r for r in await api.get("/api/runs", {"host": host}) if r.get("id") == run_id), {})
        table = await api.text("/api/compare", {"runs": run_id, "format": "markdown"})
        found = await api.get(f"/api/hosts/{_host(host)}/diagnosis", {"run": run_id})
    except ApiFailure as exc:
        raise ResourceError(str(exc)) from None
    flags = (await api.get(f"/api/hosts/{_host(host)}/status")).get("run") or {}
    chosen = flags.get("defining_flags") if flags.get("id") == run_id else None
    return "\n".join([
        f"# Run {run_id} on {host}", "",
        f"- state: {run.get('state')}; started {run.get('started_at')}, ready {run.get('ready_at')}, "
        f"ended {run.get('ended_at')} (epoch s)",
        f"- non-default flags: {chosen if chosen is not None else '(the config column below)'}",
        f"- steady: {steady.get('status')} {steady.get('message') or ''}".rstrip(),
        f"- diagnosis: {found.get('verdict')}: {found.get('sentence')}", "", table.strip(),
    ]) + "\n"

"""A config reload reaches alerting and the restart controllers, not only the collectors.

Everything runs for real in this process: the SQLite store, local collectors tailing SGLang decode
lines on disk, the alert service started by the app's lifespan, a webhook receiver, uvicorn, and the
controller restarting the simulated SGLang server on this machine. The reload is the one SIGHUP runs
(`ConfigReloader.reload`), called directly so the test knows when it is done.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.config import load_config
from kvwatch.app.controller.errors import Busy
from kvwatch.app.main import create_app
from kvwatch.app.reload import ConfigReloader
from kvwatch.app.runner import build_services
from kvwatch.app.services import Services
from tests.alerts.test_alert_webhook import Receiver
from tests.app.slice_helpers import wait_until
from tests.controller.support import free_port, host_table

T0 = 1_771_937_354.0  # 2026-02-24 12:49:14 UTC
TOKEN = "reload-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RULE = "token_usage_high"
LAUNCHER = Path(__file__).resolve().parents[1] / "controller" / "sim_launcher.py"
ROOT = Path(__file__).resolve().parents[2]


def decode_lines(start: float, usage: float, count: int, running: int = 72) -> str:
    """SGLang 0.5 decode lines, one every 5 s of log time from `start`."""
    out = []
    for i in range(count):
        stamp = dt.datetime.fromtimestamp(start + 5 * i, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        out.append(f"[{stamp} TP0] Decode batch, #running-req: {running}, #token: 153179, token usage: {usage:.3f}, "
                   f"cuda graph: True, gen throughput (token/s): 930.63, #queue-req: 3\n")
    return "".join(out)


def append(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)


def toml(value: Any) -> str:
    """A TOML value (JSON's string escapes are TOML's basic-string escapes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {toml(v)}" for k, v in value.items()) + " }"


def write_config(path: Path, server: dict[str, Any], hosts: list[dict[str, Any]],
                 alerts: dict[str, Any] | None = None) -> None:
    text = "[server]\n" + "".join(f"{key} = {toml(value)}\n" for key, value in server.items())
    for rule, settings in (alerts or {}).items():
        text += f"[alerts.{rule}]\n" + "".join(f"{key} = {toml(value)}\n" for key, value in settings.items())
    for host in hosts:
        text += "[[hosts]]\n" + "".join(f"{key} = {toml(value)}\n" for key, value in host.items())
    path.write_text(text)
    path.chmod(0o600)  # it may hold the token


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    first, second = Receiver(), Receiver()
    yield first, second
    first.close()
    second.close()


def start(path: Path, serve_app: Any) -> tuple[Services, str, ConfigReloader]:
    """`kvwatch serve` in this process: services, the app (its lifespan starts collectors and
    alerting), and the reloader SIGHUP would run."""
    services = build_services(load_config(path))
    server = serve_app(create_app(services))
    return services, server.url, ConfigReloader(services, str(path), controllers=True)


def alerts(url: str, rule: str = RULE) -> dict[str, dict[str, Any]]:
    """Open and recently resolved alerts of `rule`, by host."""
    return {a["host"]: a for a in httpx.get(f"{url}/api/alerts", timeout=10).json() if a["rule"] == rule}


def sent(receiver: Receiver, host: str, rule: str = RULE) -> list[str]:
    with receiver.lock:
        return [b["status"] for b in receiver.accepted if b["alert"]["host"] == host and b["alert"]["rule"] == rule]


def test_alerting_follows_a_reload(tmp_path: Path, serve_app: Any, receivers: tuple[Receiver, Receiver],
                                   caplog: pytest.LogCaptureFixture) -> None:
    first, second = receivers
    logs = {name: tmp_path / f"{name}.log" for name in "abcrn"}
    append(logs["a"], decode_lines(T0, 0.995, 40))  # over 0.99: fires under the first config
    append(logs["b"], decode_lines(T0, 0.97, 40))  # under 0.99: quiet until fire_at drops to 0.96
    append(logs["c"], decode_lines(T0, 0.5, 40))
    append(logs["r"], decode_lines(T0, 0.995, 40))  # fires, then its host is removed
    append(logs["n"], decode_lines(T0, 0.97, 40))  # only read once a reload adds host n
    outputs = tmp_path / "out_c"
    outputs.mkdir()
    (outputs / "part.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in range(10)))

    def host(name: str, **more: Any) -> dict[str, Any]:
        return {"name": name, "ssh": "local", "server_log": str(logs[name]), **more}

    c_table = {"outputs": [f"{outputs}/*.jsonl"], "alerts": {"outputs_stalled": {"after": "2s"}}}
    server = {"data_dir": str(tmp_path), "webhook": first.url}
    path = tmp_path / "kvwatch.toml"
    write_config(path, server, [host("a"), host("b"), host("c", target_completions=100, **c_table), host("r")],
                 alerts={RULE: {"fire_at": 0.99, "stay_at": 0.98}})
    services, url, reloader = start(path, serve_app)
    wait_until(lambda: {"a", "r"} <= {h for h, a in alerts(url).items() if a["state"] == "firing"}, timeout=60)
    # c: 10 of 100 outputs written, none for 2 s while the server runs requests: stalled.
    wait_until(lambda: alerts(url, "outputs_stalled").get("c", {}).get("state") == "firing", timeout=30)
    since_a = alerts(url)["a"]["since"]
    assert since_a == T0 + 120 and "b" not in alerts(url)
    wait_until(lambda: sent(first, "a") == ["firing"] and sent(first, "r") == ["firing"], timeout=30)

    # The reload: fire_at 0.96 for everyone, r removed, n added, c's target now reached, a new webhook.
    write_config(path, {**server, "webhook": second.url},
                 [host("a"), host("b"), host("c", target_completions=10, **c_table), host("n")],
                 alerts={RULE: {"fire_at": 0.96}})
    caplog.set_level(logging.INFO)
    assert reloader.reload()
    append(logs["a"], decode_lines(T0 + 200, 0.995, 6))
    append(logs["b"], decode_lines(T0 + 200, 0.97, 40))  # new lines at 0.97 now cross fire_at

    wait_until(lambda: alerts(url).get("n", {}).get("state") == "firing", timeout=60)  # added host, its own log
    assert alerts(url)["n"]["since"] == T0 + 120
    wait_until(lambda: alerts(url).get("b", {}).get("state") == "firing", timeout=60)  # the new fire_at applies
    assert alerts(url)["b"]["since"] == T0 + 200 + 120
    wait_until(lambda: alerts(url, "outputs_stalled").get("c", {}).get("state") == "resolved", timeout=30)
    assert alerts(url)["a"]["state"] == "firing" and alerts(url)["a"]["since"] == since_a  # carried on

    # r: its open alert resolved once, noted, to the new webhook; it is no longer evaluated or listed.
    wait_until(lambda: sent(second, "r") == ["resolved"], timeout=30)
    with second.lock:
        resolved_r = next(b for b in second.accepted if b["alert"]["host"] == "r")
    assert "host removed from the config" in resolved_r["text"]
    alerting = services.alerts
    assert alerting is not None and "r" not in alerting.engine.rules
    assert "r" not in alerts(url)
    assert httpx.get(f"{url}/api/alerts", params={"host": "r"}, timeout=10).status_code == 404
    wait_until(lambda: sent(second, "n") == ["firing"] and sent(second, "b") == ["firing"], timeout=30)
    assert sent(first, "a") == ["firing"] and sent(second, "a") == []  # a's firing was not sent again
    assert sent(first, "n") == [] and sent(first, "b") == []  # after the reload, only the new URL
    assert [r.getMessage() for r in caplog.records if "not applied" in r.getMessage()] == []  # webhook is live


def controller_host(tmp: Path, name: str, **restart: Any) -> dict[str, Any]:
    """A [[hosts]] table whose `launch` starts the simulated SGLang server on this machine."""
    table = host_table(tmp / name, free_port(), server=str(LAUNCHER), python=sys.executable,
                       env=f"PYTHONPATH={ROOT} SIM_ARGS='--sim-speed 20 --sim-drain-timeout 5'", **restart)
    (tmp / name / "logs").mkdir(parents=True)
    return {**table, "name": name, "ssh": "local"}


def restart(url: str, host: str) -> httpx.Response:
    return httpx.post(f"{url}/api/hosts/{host}/restart", json={"flags": {"mem-fraction-static": 0.85}},
                      headers=AUTH, timeout=30)


def test_controllers_follow_a_reload_and_a_busy_one_refuses_it(tmp_path: Path, serve_app: Any,
                                                               caplog: pytest.LogCaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KVWATCH_TOKEN", raising=False)
    path, server = tmp_path / "kvwatch.toml", {"data_dir": str(tmp_path), "token": TOKEN}
    g1, g3 = controller_host(tmp_path, "g1"), controller_host(tmp_path, "g3")
    write_config(path, server, [g1])
    services, url, reloader = start(path, serve_app)
    live, made = services.controllers, list(services.controllers.values())
    try:
        assert set(live) == {"g1"} and restart(url, "g3").status_code == 404
        write_config(path, server, [g3])  # g1 removed, g3 added
        assert reloader.reload()
        # A new set swapped in whole (what the API reads next); the one read before is left as it was.
        assert services.controllers is not live and set(live) == {"g1"} and set(services.controllers) == {"g3"}
        live = services.controllers
        controller = live["g3"]
        made.append(controller)
        assert restart(url, "g1").status_code == 404
        answer = restart(url, "g3")
        assert answer.status_code == 202, answer.text
        assert controller.busy and controller.last is not None
        assert controller.last.run_id == answer.json()["run_id"]  # the request reached g3's controller

        # While g3 restarts, a reload that leaves its controller alone applies...
        write_config(path, server, [g3], alerts={RULE: {"fire_at": 0.97}})
        assert reloader.reload() and services.controllers["g3"] is controller and controller.busy
        # ...and one that would rebuild it is refused as a whole.
        write_config(path, server, [{**g3, "restart": {**g3["restart"], "stop_timeout": 7}}])
        collectors, config = dict(services.collectors), services.config
        caplog.set_level(logging.INFO)
        assert not reloader.reload()
        refused = [r.getMessage() for r in caplog.records if "reload refused" in r.getMessage()]
        assert len(refused) == 1 and "host 'g3' is restarting" in refused[0], refused
        assert services.controllers["g3"] is controller and services.config is config
        assert services.collectors == collectors
        op = controller.wait(120)
        assert op is not None and op.outcome == "ok", op.public() if op else None

        # Once it is done, the same file applies: a new controller with the new settings, and the
        # restart panel still shows the last operation.
        assert reloader.reload()
        rebuilt = services.controllers["g3"]
        made.append(rebuilt)
        assert rebuilt is not controller and rebuilt.settings.stop_timeout == 7
        status = httpx.get(f"{url}/api/hosts/g3/restart", timeout=10).json()
        assert status["busy"] is False
        assert status["operation"]["run_id"] == op.run_id and status["operation"]["outcome"] == "ok"
        with pytest.raises(Busy, match="config was just reloaded"):  # a request holding the old one
            controller.begin("stale reference", flags={"mem-fraction-static": 0.85})

        write_config(path, server, [])  # g3 removed too
        assert reloader.reload()
        assert services.controllers == {} and restart(url, "g3").status_code == 404
    finally:
        for one in made:  # stop what the restart started, by the host's record
            one.wait(120)
            one.remote.stop(5)

"""What a token may be when kvwatch listens beyond loopback, and what a request with the token may change:
tuning flags, not the code, weights or listening address of the server (unless the config allows them
by name); numbers in a plausible range."""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.config.controller import ControllerConfig
from kvwatch.app.controller.errors import InvalidFlags, Vetoed
from kvwatch.app.controller.plan import plan_flags
from kvwatch.app.controller.policy import parse_controller_config
from kvwatch.app.errors import ConfigError
from kvwatch.app.flags.argv import Launch, parse_launch
from kvwatch.app.flags.schema import load_bundled
from kvwatch.app.main import create_app
from kvwatch.app.runner import check_bind
from kvwatch.simulator.demo import PRESETS, VETOED_PRESETS, config_tables
from tests.app.slice_helpers import start_services
from tests.controller.conftest import controllers  # noqa: F401  (the fixture, with its teardown)
from tests.controller.support import MemorySinks, free_port, make_config
from tests.hardening.world import OPEN_LIMITS, TOKEN

SCHEMA = load_bundled("0.5.23")
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def kvwatch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvwatch.app", *args], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, **(env or {})})


# --- tokens ------------------------------------------------------------------------------------------

# The random tokens carry fixed ids: pytest-xdist requires every worker to collect the same test ids,
# and each worker draws its own token.
@pytest.mark.parametrize("token", ["hunter2", "hardening-s3cret-token-7f3a", "a" * 40, "ab" * 20,
                                   "change-me-to-a-long-random-string",
                                   pytest.param(secrets.token_hex(15), id="token_hex(15)")])
def test_a_weak_token_is_refused_beyond_loopback(token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KVWATCH_TOKEN", raising=False)
    with pytest.raises(ConfigError, match=r"^server\.token: too weak to bind 0\.0\.0\.0: use at least 32 random"):
        check_bind("0.0.0.0", token)
    check_bind("127.0.0.1", token)  # loopback: the token only guards against other local users
    check_bind("::1", token)


@pytest.mark.parametrize("token", [pytest.param(secrets.token_hex(16), id="token_hex(16)"),
                                   pytest.param(secrets.token_urlsafe(32), id="token_urlsafe(32)"),
                                   pytest.param(secrets.token_urlsafe(24), id="token_urlsafe(24)")])
def test_a_random_token_of_128_bits_or_more_is_accepted(token: str) -> None:
    check_bind("0.0.0.0", token)
    check_bind("10.1.2.3", token)


def test_the_refusal_is_one_line_naming_the_field(tmp_path: Path) -> None:
    config = tmp_path / "kvwatch.toml"
    config.write_text('[server]\nhost = "0.0.0.0"\ntoken = "short-but-set"\n')
    config.chmod(0o600)
    done = kvwatch("serve", "--config", str(config))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "server.token: too weak to bind 0.0.0.0" in lines[0], done.stderr
    assert "short-but-set" not in done.stderr
    done = kvwatch("serve", "--config", str(config), env={"KVWATCH_TOKEN": "change-me-to-a-long-random-string"})
    assert done.returncode == 2 and "error: KVWATCH_TOKEN: too weak" in done.stderr, done.stderr


def test_init_writes_a_fresh_strong_token_in_a_private_file(tmp_path: Path) -> None:
    tokens = []
    for name in ("a.toml", "b.toml"):
        done = kvwatch("init", "--ssh-config", str(tmp_path / "none"), "-o", str(tmp_path / name))
        assert done.returncode == 0, done.stderr
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
        token = tomllib.loads((tmp_path / name).read_text())["server"]["token"]
        check_bind("0.0.0.0", token)
        assert len(token) >= 43
        tokens.append(token)
    assert tokens[0] != tokens[1]


# --- flags -------------------------------------------------------------------------------------------

def controller_config(allow: list[str] | None = None) -> ControllerConfig:
    table = {"name": "gpu1", "launch": "python -m sglang.launch_server --model-path /models/K --tp-size 8 "
                                       "--trust-remote-code --host 127.0.0.1 --port 30000",
             "restart": {"flags_schema": "0.5.23", **({"allow_flags": allow} if allow is not None else {})}}
    config = parse_controller_config(table)
    assert config is not None
    return config


def launch_of(config: ControllerConfig) -> Launch:
    launch, errors = parse_launch(SCHEMA, config.launch)
    assert not errors
    return launch


def plan(flags: dict[str, object], config: ControllerConfig | None = None) -> dict[str, Any]:
    chosen = config or controller_config()
    return dict(plan_flags(chosen, SCHEMA, launch_of(chosen), flags, None))


GUARDED = [{"model-path": "/models/other"}, {"model": "/models/other"}, {"tokenizer-path": "/tmp/t"},
           {"trust-remote-code": False}, {"enable-custom-logit-processor": True}, {"port": 30001},
           {"host": "0.0.0.0"}, {"custom-weight-loader": ["x.y"]}, {"chat-template": "/tmp/t.jinja"},
           {"json-model-override-args": "x"}, {"lora-paths": ["a=/tmp/l"]}, {"enable-lora": True},
           {"speculative-draft-model-path": "/m/d"}, {"ssl-certfile": "/tmp/c"}, {"log-requests": True},
           {"otlp-traces-endpoint": "x:4317"}, {"crash-dump-folder": "/tmp"}, {"sidecar": "x"},
           {"port": None}, {"revision": "main"}, {"load-format": "dummy"}]


@pytest.mark.parametrize("flags", GUARDED, ids=lambda f: next(iter(f)))
def test_flags_that_change_what_runs_or_is_exposed_are_refused(flags: dict[str, object]) -> None:
    with pytest.raises(Vetoed, match=r"not a tuning flag .* allow it by name in hosts\.restart\.allow_flags"):
        plan(flags)


def test_allowed_by_name_they_pass() -> None:
    config = controller_config(allow=["model-path", "--port"])
    assert plan({"model-path": "/models/other", "port": 30001}, config)["model-path"] == "/models/other"
    with pytest.raises(Vetoed, match="--trust-remote-code"):
        plan({"model-path": "/models/other", "trust-remote-code": False}, config)


def test_the_launch_lines_own_values_are_not_changes() -> None:
    planned = plan({"model-path": "/models/K", "port": 30000, "mem-fraction-static": 0.88})
    assert planned["model-path"] == "/models/K" and planned["trust-remote-code"] is True


@pytest.mark.parametrize("flags", [{"tp-size": 10**30}, {"tp": 0}, {"dp-size": 4096}, {"mem-fraction-static": 1.5},
                                   {"mem-fraction-static": -0.1}, {"max-running-requests": 2**31},
                                   {"context-length": "3T"}, {"hicache-size": -(2**40)},
                                   {"schedule-conservativeness": 1e300}, {"chunked-prefill-size": "99999999999"}])
def test_numbers_out_of_range_are_invalid(flags: dict[str, object]) -> None:
    with pytest.raises(InvalidFlags) as raised:
        plan(flags)
    assert "out of range" in str(raised.value.errors[0].message)


def test_tuning_flags_and_every_demo_preset_still_pass() -> None:
    assert plan({"tp": 8, "mem-fraction-static": 1, "context-length": "16k", "max-running-requests": 256,
                 "hicache-size": 48, "cuda-graph-max-bs-decode": 160, "decode-log-interval": 10,
                 "served-model-name": "kimi"})["tp-size"] == 8
    demo = parse_controller_config({"name": "demo", "launch": "python -m sglang.launch_server --model-path /m "
                                    "--tp-size 8 --enable-metrics --host 127.0.0.1 --port 31000",
                                    "restart": {"flags_schema": "0.5.23"}}, config_tables())
    assert demo is not None
    for name in PRESETS:
        if name in VETOED_PRESETS:
            continue
        plan_flags(demo, SCHEMA, launch_of(demo), None, name)


@pytest.fixture
def api(tmp_path: Path, controllers: Any) -> Iterator[tuple[TestClient, MemorySinks]]:  # noqa: F811
    sinks = MemorySinks()
    app = create_app(start_services(tmp_path), manage_collectors=False, limits=OPEN_LIMITS)
    app.state.api_token = TOKEN
    app.state.controllers = {"gpu1": controllers(make_config(tmp_path, free_port()), sinks=sinks)}
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        yield client, sinks


def test_over_http_guarded_is_403_and_out_of_range_is_422_and_nothing_runs(
    api: tuple[TestClient, MemorySinks],
) -> None:
    client, sinks = api
    answer = client.post("/api/hosts/gpu1/restart", json={"flags": {"trust-remote-code": True}}, headers=AUTH)
    assert answer.status_code == 403 and "allow_flags" in answer.json()["detail"]
    answer = client.post("/api/hosts/gpu1/restart", json={"flags": {"tp-size": 10**30}}, headers=AUTH)
    assert answer.status_code == 422 and "out of range" in answer.text
    assert not sinks.started and len(sinks.audits) == 2

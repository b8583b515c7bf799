"""docker-compose.yml is valid for the real Compose v2 and says what the README promises."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.ecosystem.repo import REPO, ComposeRunner

ALL_PROFILES = ("--profile", "gpu", "--profile", "observability")


def resolved(docker_compose: ComposeRunner, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = docker_compose(*args, "config", "--format", "json", env=env)
    assert result.returncode == 0, result.stderr
    config: dict[str, Any] = json.loads(result.stdout)
    return config


@pytest.mark.parametrize("profiles", [(), ("--profile", "gpu"), ("--profile", "observability"), ALL_PROFILES])
def test_compose_config_is_valid(docker_compose: ComposeRunner, profiles: tuple[str, ...]) -> None:
    result = docker_compose(*profiles, "config", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_default_profile_runs_kvwatch_alone(docker_compose: ComposeRunner) -> None:
    services = resolved(docker_compose)["services"]
    assert sorted(services) == ["kvwatch"]


def test_every_service_has_a_healthcheck_and_publishes_on_loopback_only(docker_compose: ComposeRunner) -> None:
    services = resolved(docker_compose, *ALL_PROFILES)["services"]
    assert sorted(services) == ["grafana", "kvwatch", "prometheus", "sglang"]
    for name, service in services.items():
        assert service["healthcheck"]["test"][0] == "CMD", name
        for port in service["ports"]:
            assert port["host_ip"] == "127.0.0.1", (name, port)


def test_kvwatch_is_built_from_the_repo_with_data_on_a_volume_and_token_from_the_env_file(
    docker_compose: ComposeRunner,
) -> None:
    kvwatch = resolved(docker_compose)["services"]["kvwatch"]
    dockerfile = REPO / kvwatch["build"]["dockerfile"]
    assert dockerfile.is_file()
    assert dockerfile.with_name(dockerfile.name + ".dockerignore").is_file()
    mounts = {m["target"]: m for m in kvwatch["volumes"]}
    assert mounts["/data"]["type"] == "volume"
    assert mounts["/config/kvwatch.toml"]["read_only"] is True
    assert not mounts["/config/kvwatch.toml"].get("bind", {}).get("create_host_path")  # short form sets it true
    assert kvwatch["environment"]["KVWATCH_TOKEN"] == "test-token"  # from the fixture's env file


def test_missing_env_file_is_refused_by_name(docker_compose: ComposeRunner) -> None:
    result = docker_compose("config", "-q", env={"KVWATCH_ENV_FILE": "/nonexistent/kvwatch.env"})
    assert result.returncode != 0
    assert "/nonexistent/kvwatch.env" in result.stderr


def test_dockerfile_copies_only_what_its_ignore_file_lets_through() -> None:
    dockerfile = (REPO / "app/container/Dockerfile").read_text()
    ignore = (REPO / "app/container/Dockerfile.dockerignore").read_text().splitlines()
    copied = [source for line in re.findall(r"^COPY (.+)$", dockerfile, flags=re.M) for source in line.split()[:-1]]
    assert {"pyproject.toml", "README.md", "app", "static"} <= set(copied)  # README: pyproject's `readme`
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for source in copied:
        assert (REPO / source).exists(), source
        assert source in allowed, f"{source} is excluded from the build context"


def test_sglang_launch_flags_are_variables(docker_compose: ComposeRunner) -> None:
    env = {"SGLANG_MODEL": "/models/Kimi-K2.5", "SGLANG_TP": "8", "SGLANG_EXTRA_ARGS": "--enable-dp-attention"}
    sglang = resolved(docker_compose, "--profile", "gpu", env=env)["services"]["sglang"]
    assert sglang["image"].startswith("lmsysorg/sglang:")
    assert sglang["environment"]["SGLANG_MODEL"] == "/models/Kimi-K2.5"
    assert sglang["environment"]["SGLANG_TP"] == "8"
    assert sglang["environment"]["SGLANG_EXTRA_ARGS"] == "--enable-dp-attention"
    script = sglang["command"][-1]
    # Values reach the shell as quoted variable references, never spliced into the script.
    assert "/models/Kimi-K2.5" not in script
    assert '--model-path "$$SGLANG_MODEL"' in script
    assert "/logs/" in script  # the log kvwatch tails through the shared volume
    devices = sglang["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]


def test_observability_mounts_files_kept_in_the_repo(docker_compose: ComposeRunner) -> None:
    services = resolved(docker_compose, "--profile", "observability")["services"]
    for name in ("prometheus", "grafana"):
        for mount in services[name]["volumes"]:
            if mount["type"] == "bind":
                assert mount["source"].startswith(str(REPO / "app/container")), mount
                assert (REPO / mount["source"]).exists(), mount
    assert services["grafana"]["depends_on"]["prometheus"]["condition"] == "service_healthy"
    assert services["prometheus"]["depends_on"]["kvwatch"]["condition"] == "service_healthy"


def test_config_validates_on_a_fresh_clone_without_an_env_file(docker_compose: ComposeRunner, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "docker-compose.yml").write_text((REPO / "docker-compose.yml").read_text())
    (clone / "kvwatch.toml").write_text("")
    result = docker_compose("config", "--format", "json", env={"KVWATCH_ENV_FILE": ""},
                            file=clone / "docker-compose.yml")
    assert result.returncode == 0, result.stderr
    kvwatch = json.loads(result.stdout)["services"]["kvwatch"]
    # No token reaches the container, and the image's command binds 0.0.0.0, which `serve` refuses
    # without a token (the bind rule is tested in tests/app).
    assert "KVWATCH_TOKEN" not in (kvwatch.get("environment") or {})
    dockerfile = (REPO / "app/container/Dockerfile").read_text()
    assert re.search(r'^CMD \[.*"--host", "0\.0\.0\.0"\]', dockerfile, flags=re.M)

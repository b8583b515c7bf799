"""A reload swaps the registries (config, collectors, controllers) whole (issue #21): a reader on
another thread sees the old set or the new one, never a half-updated mix, and nobody can edit a set
in place. The services are built by app/build.py, the reload is the one SIGHUP runs."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.build import build_services
from kvwatch.app.config import Config, HostConfig, ServerConfig, load_config
from kvwatch.app.reload import ConfigReloader
from kvwatch.app.services import Registries, Services
from tests.controller.support import free_port, host_table
from tests.hardening.test_reload_complete import write_config

RELOADS = 8


def hosts(tmp: Path, names: str, launch: str) -> list[dict[str, Any]]:
    """Local hosts; those named in `launch` also have a controller."""
    tables = []
    for name in names:
        (tmp / f"{name}.log").touch()
        table: dict[str, Any] = {"name": name, "ssh": "local", "server_log": str(tmp / f"{name}.log")}
        if name in launch:
            table = {**host_table(tmp / name, free_port()), **table}
        tables.append(table)
    return tables


def mix_in(registries: Registries) -> str | None:
    """What in one read of the registries does not belong to its own config, if anything."""
    config = {h.name: h for h in registries.config.hosts}
    if set(registries.collectors) != set(config):
        return f"collectors {sorted(registries.collectors)} for hosts {sorted(config)}"
    if set(registries.controllers) != {name for name, h in config.items() if h.launch}:
        return f"controllers {sorted(registries.controllers)} for hosts {sorted(config)}"
    stale = [name for name, c in registries.collectors.items() if c.host != config[name]]
    return f"collectors of another config: {stale}" if stale else None


def test_a_reader_during_reloads_sees_the_old_set_or_the_new_one(tmp_path: Path) -> None:
    path, server = tmp_path / "kvwatch.toml", {"data_dir": str(tmp_path)}
    first, second = hosts(tmp_path, "ab", launch="a"), hosts(tmp_path, "bc", launch="c")
    write_config(path, server, first)
    services = build_services(load_config(path))
    services.start_collectors()
    reloader = ConfigReloader(services, str(path), controllers=True)
    seen: set[tuple[str, ...]] = set()
    mixes: list[str] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            mix = mix_in(services.registries)
            if mix is not None:
                mixes.append(mix)
            seen.add(tuple(services.collectors))  # one attribute read on its own: a whole set too

    reader = threading.Thread(target=read, name="reader")
    reader.start()
    try:
        for n in range(RELOADS):
            write_config(path, server, second if n % 2 == 0 else first)
            assert reloader.reload()
    finally:
        done.set()
        reader.join(10)
        services.stop()
    assert reloader.reloads == RELOADS and mixes == []
    assert seen == {("a", "b"), ("b", "c")}


def test_an_unchanged_host_keeps_its_collector_and_a_changed_one_gets_a_new_one(tmp_path: Path) -> None:
    path, server = tmp_path / "kvwatch.toml", {"data_dir": str(tmp_path)}
    write_config(path, server, hosts(tmp_path, "ab", launch=""))
    services = build_services(load_config(path))
    services.start_collectors()
    try:
        before = services.registries
        changed = [{**table, "target_completions": 10} if table["name"] == "b" else table
                   for table in hosts(tmp_path, "abc", launch="")]
        write_config(path, server, changed)
        assert ConfigReloader(services, str(path)).reload()
        after = services.registries
        assert after is not before and list(after.collectors) == ["a", "b", "c"]
        assert after.collectors["a"] is before.collectors["a"] and after.collectors["a"].is_alive()
        assert after.collectors["b"] is not before.collectors["b"] and after.collectors["b"].is_alive()
        assert not before.collectors["b"].is_alive()  # stopped before its successor started
        assert list(before.collectors) == ["a", "b"] and before.config.hosts[1].target_completions is None
    finally:
        services.stop()


def test_the_registries_are_frozen_copies(tmp_path: Path) -> None:
    config = Config(server=ServerConfig(), hosts=(HostConfig(name="a", ssh="local", server_log="/a.log"),))
    given: dict[str, Any] = {"a": object()}
    registries = Registries(config, given)
    given["b"] = object()
    assert list(registries.collectors) == ["a"]
    with pytest.raises(TypeError):
        registries.collectors["b"] = object()  # type: ignore[index]
    with pytest.raises(AttributeError):
        registries.config = config  # type: ignore[misc]


def test_what_each_process_builds(tmp_path: Path) -> None:
    """`serve` builds collectors and controllers, `serve --no-collect` controllers only, `collect`
    collectors only."""
    config_path = tmp_path / "kvwatch.toml"
    write_config(config_path, {"data_dir": str(tmp_path)}, hosts(tmp_path, "ab", launch="b"))
    config = load_config(config_path)

    def built(**how: bool) -> tuple[list[str], list[str]]:
        services: Services = build_services(config, **how)
        try:
            return list(services.collectors), list(services.controllers)
        finally:
            services.stop()

    assert built() == (["a", "b"], ["b"])
    assert built(collect=False) == ([], ["b"])
    assert built(controllers=False) == (["a", "b"], [])

"""Restart-level versions of two controller faults, checked for what tests/controller leaves out:
the audit trail. A server that ignores SIGTERM is replaced by the next restart (killed, one instance
on the port, both restarts audited ok); a recycled pid in the record is never signalled by a restart,
which still starts its server and is audited."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.controller.conftest import controllers  # noqa: F401  (the fixture, with its teardown)
from tests.controller.support import MemorySinks, free_port, instances, make_config, record_recycled_pid


def test_a_restart_replaces_a_server_that_ignores_sigterm(tmp_path: Path, controllers: Any) -> None:  # noqa: F811
    sinks, port = MemorySinks(), free_port()
    controller = controllers(make_config(tmp_path, port, stop_timeout=1), sinks=sinks)
    controller.begin("t", flags={"served-model-name": "ignore-term"})
    first = controller.wait(120)
    assert first is not None and first.outcome == "ok", first.public() if first else None
    old_pid = json.loads((tmp_path / "state" / "current.json").read_text())["pid"]
    controller.begin("t", flags={"mem-fraction-static": 0.85})
    second = controller.wait(120)
    assert second is not None and second.outcome == "ok", second.public()
    stat = Path(f"/proc/{old_pid}/stat")
    assert not stat.exists() or stat.read_text().rsplit(") ", 1)[1][0] == "Z"
    assert len(instances(port)) == 1
    assert [a.outcome for a in sinks.audits] == ["ok", "ok"]


def test_a_restart_never_signals_a_recycled_pid(tmp_path: Path, controllers: Any) -> None:  # noqa: F811
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        record_recycled_pid(tmp_path / "state", bystander.pid)
        sinks, port = MemorySinks(), free_port()
        controller = controllers(make_config(tmp_path, port), sinks=sinks)
        controller.begin("t", flags={"mem-fraction-static": 0.85})
        op = controller.wait(120)
        assert op is not None and op.outcome == "ok", op.public() if op else None
        assert bystander.poll() is None  # alive: its start time is not the record's
        assert len(instances(port)) == 1
        assert [a.outcome for a in sinks.audits] == ["ok"]
    finally:
        bystander.kill()
        bystander.wait()

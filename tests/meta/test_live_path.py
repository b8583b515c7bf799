"""The live path is declared in one place, ARCHITECTURE.md's "One live line" table (stage -> modules),
and that declaration is what a line really passes through: the bench that measures it
(bench/live_path_modules.py) runs here, so a module added to or dropped from the path fails this
test until the table says so."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
STAGES = ["read", "lines", "parse", "rows", "store", "bus", "SSE"]


def declared() -> dict[str, list[str]]:
    """The table's modules by stage, in table order."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("## One live line\n", 1)[1].split("\n## ", 1)[0]
    stages: dict[str, list[str]] = {}
    for row in section.splitlines():
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in STAGES:
            stages[cells[0]] = re.findall(r"`([^`]+\.py)`", cells[1])
    return stages


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("live_path_modules", ROOT / "bench" / "live_path_modules.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up by name
    spec.loader.exec_module(module)
    return module


def test_every_stage_is_declared_once_with_existing_modules() -> None:
    stages = declared()
    assert list(stages) == STAGES
    modules = [m for names in stages.values() for m in names]
    assert len(modules) == len(set(modules))
    assert [m for m in modules if not (ROOT / m).is_file()] == []


def test_the_declaration_is_the_measured_path() -> None:
    measured = _bench().measure()
    modules = {m for names in declared().values() for m in names}
    assert {"missing from the table": sorted(set(measured.path) - modules),
            "not on the measured path": sorted(modules - set(measured.path))} == {
        "missing from the table": [], "not on the measured path": []}
    # the line's own path is part of what every thread runs in the same delivery
    assert set(measured.path) <= set(measured.every)

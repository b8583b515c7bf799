"""`make check` is every test that needs no real component: its marker expression leaves out exactly
the components tests/conftest.py marks, and the modules that conftest lists by hand exist."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import BUDGET_MODULES, COMPONENT_FIXTURES, COMPONENT_MARKERS, PROCESS_MODULES

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text()


def _recipe(target: str) -> str:
    return MAKEFILE.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]


def test_every_listed_module_exists_and_is_listed_once() -> None:
    for listed in (PROCESS_MODULES, BUDGET_MODULES):
        assert len(set(listed)) == len(listed)
        assert [m for m in listed if not (ROOT / m).is_file()] == []


def test_check_leaves_out_every_component_and_nothing_else() -> None:
    expression = re.search(r"^CHECK_MARKERS := not \((.+)\)$", MAKEFILE, re.MULTILINE)
    assert expression is not None
    left_out = set(expression.group(1).split(" or "))
    assert left_out == {*COMPONENT_MARKERS, *COMPONENT_FIXTURES.values(), "process", "slow"}


def test_check_runs_the_whole_tests_folder_ruff_and_mypy() -> None:
    recipe = _recipe("check")
    assert "ruff check ." in recipe and "/mypy" in recipe
    pytest_line = next(line for line in recipe.splitlines() if "pytest" in line)
    assert pytest_line.rstrip().endswith('-m "$(CHECK_MARKERS)" $(PYTEST_ARGS)')  # no paths: all of tests/


# What starts a demo (kvwatch and simulated servers that run for minutes): a module that does it outside
# tests/browser (marked by its fixtures) is listed in PROCESS_MODULES, or `make check` waits on it.
STARTS_PROCESSES = re.compile(r'start_demo_world\(|kvwatch_demo\(|running_demo\(|"demo", "--no-browser"')


def test_every_module_that_starts_a_demo_or_kvwatch_is_listed() -> None:
    starting = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                if "browser" not in p.parts and p.name != Path(__file__).name
                and STARTS_PROCESSES.search(p.read_text())}
    assert sorted(starting - set(PROCESS_MODULES)) == []

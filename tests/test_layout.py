"""The data flow runs one way: collectors/ and parsers/ never import app/; parsers/ never imports collectors/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"collectors": {"app"}, "parsers": {"app", "collectors"}, "simulator": {"app"}}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_upstream(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_import_checker_sees_violations(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("import app.main\nfrom collectors.base import Line\nfrom . import sibling\n")
    assert imported_packages(sample) == {"app", "collectors"}


def test_fixed_top_level_layout() -> None:
    for name in ("pyproject.toml", "app", "collectors", "parsers", "static", "tests", "docker-compose.yml"):
        assert (ROOT / name).exists(), name

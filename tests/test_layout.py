"""The data flow runs one way: collectors/ and parsers/ never import app/; parsers/ never imports collectors/.

Everything is imported through the one import root, `kvwatch` (`kvwatch.app`, `kvwatch.collectors`, ...).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"collectors": {"app"}, "parsers": {"app", "collectors"}, "simulator": {"app"}}
OUR_PACKAGES = ("app", "collectors", "parsers", "simulator")
SOURCE_TREES = (*OUR_PACKAGES, "tests", "bench")


def _package_of(module: str) -> str:
    """`kvwatch.app.store` -> `app`; anything outside the import root keeps its first name."""
    parts = module.split(".")
    return parts[1] if parts[0] == "kvwatch" and len(parts) > 1 else parts[0]


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(_package_of(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(_package_of(node.module))
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
    sample.write_text("import kvwatch.app.main\nfrom kvwatch.collectors.base import Line\nfrom . import sibling\n")
    assert imported_packages(sample) == {"app", "collectors"}


def bare_roots(path: Path) -> set[str]:
    """Our packages imported by their folder name instead of through `kvwatch`."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
        found.update(m.split(".")[0] for m in modules if m.split(".")[0] in OUR_PACKAGES)
    return found


def test_everything_imports_through_the_kvwatch_root() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(bare_roots(path))
        for tree in SOURCE_TREES
        for path in (ROOT / tree).rglob("*.py")
        if "scratch" not in path.parts
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_bare_root_checker_sees_violations(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("import app.main\nfrom parsers import sglang\nfrom kvwatch.collectors import base\n")
    assert bare_roots(sample) == {"app", "parsers"}


def test_fixed_top_level_layout() -> None:
    for name in ("pyproject.toml", "app", "collectors", "parsers", "static", "tests", "docker-compose.yml"):
        assert (ROOT / name).exists(), name


def window_hooks(static: Path) -> list[str]:
    """`window.kvwatch...` in the page's files: a test hook, which production code does not carry (the
    tests watch the DOM, plotly's graph divs, the network and the clipboard instead)."""
    return [f"{path.name}:{n}" for path in sorted(static.glob("*.*")) if path.suffix in (".js", ".html")
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"window\s*(\.|\[\s*[\"'`])\s*kvwatch", line)]


def test_the_page_has_no_test_hooks() -> None:
    assert window_hooks(ROOT / "static") == []


def test_hook_checker_sees_hooks(tmp_path: Path) -> None:
    (tmp_path / "app.js").write_text("let a = 1;\nwindow.kvwatchReady = true;\nwindow['kvwatchX'] = 2;\n")
    assert window_hooks(tmp_path) == ["app.js:2", "app.js:3"]

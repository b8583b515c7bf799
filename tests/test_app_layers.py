"""Inside app/: its parts (a subpackage, or a module directly under app/) import each other without
cycles, so each can be read, tested and changed from the bottom up (issue #21). Imports made only for
type checking do not count; an import inside a function does (it still ties the two parts together)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = "kvwatch.app"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["kvwatch", *parts])


def part_of(module: str) -> str:
    """`kvwatch.app.pipeline.relay` -> `pipeline`; `kvwatch.app.services` -> `services`."""
    return module.split(".")[2]


def _runtime_imports(tree: ast.Module) -> Iterator[str]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def part_graph(root: Path) -> dict[str, set[str]]:
    """Which parts of app/ each part imports (edges within a part left out)."""
    graph: dict[str, set[str]] = {}
    for path in (root / "app").rglob("*.py"):
        source = part_of(_module_name(path, root)) if path.parent != root / "app" or path.stem != "__init__" else ""
        if not source:
            continue
        for module in _runtime_imports(ast.parse(path.read_text(), str(path))):
            if module.startswith(f"{APP}.") and part_of(module) != source:
                graph.setdefault(source, set()).add(part_of(module))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one part (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_parts_of_app_import_each_other_without_cycles() -> None:
    assert cycles(part_graph(ROOT)) == []


def test_the_cycle_check_sees_one(tmp_path: Path) -> None:
    (tmp_path / "app" / "pipeline").mkdir(parents=True)
    (tmp_path / "app" / "pipeline" / "collector.py").write_text("from kvwatch.app.controller.restart import x\n")
    (tmp_path / "app" / "controller").mkdir()
    (tmp_path / "app" / "controller" / "wiring.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kvwatch.app.services import S\n"
        "def f():\n    from kvwatch.app.pipeline.transports import open_transport\n")
    (tmp_path / "app" / "services.py").write_text("from kvwatch.app.store import Store\n")
    assert part_graph(tmp_path) == {"pipeline": {"controller"}, "controller": {"pipeline"}, "services": {"store"}}
    assert cycles(part_graph(tmp_path)) == [["controller", "pipeline"]]

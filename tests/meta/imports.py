"""The project's modules and the imports between them, read from the source (no import is run)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the import root's packages and the folders they live in (pyproject.toml's package-dir)
FOLDERS = {"kvwatch.app": "app", "kvwatch.collectors": "collectors", "kvwatch.parsers": "parsers",
           "kvwatch.simulator": "simulator"}


def path_of(module: str) -> Path | None:
    """The file of a kvwatch module (a package's __init__.py), or None outside the project."""
    for package, folder in FOLDERS.items():
        if module == package or module.startswith(package + "."):
            base = ROOT / folder / Path(*module.removeprefix(package).lstrip(".").split(".") or [])
            for candidate in (base / "__init__.py", base.with_suffix(".py")):
                if candidate.is_file():
                    return candidate
    return None


def module_of(path: Path) -> str:
    rel = path.relative_to(ROOT)
    package = next(name for name, folder in FOLDERS.items() if rel.parts[0] == folder)
    parts = list(rel.with_suffix("").parts[1:])
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def modules() -> list[str]:
    return sorted(module_of(p) for folder in FOLDERS.values() for p in (ROOT / folder).rglob("*.py"))


@cache
def imports(module: str) -> frozenset[str]:
    """The project modules `module` names in an import anywhere in it (function level too): for
    `from P import n`, P itself and also P.n when that is a module (P's __init__ runs either way,
    and its names are what the statement reads)."""
    path = path_of(module)
    if path is None:
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return frozenset(name for name in found if path_of(name) is not None)

"""No package's __init__ imports a submodule that (directly or through its package's other modules)
imports the package back: such a cycle works only while the __init__'s lines keep their order."""

from __future__ import annotations

from tests.meta.imports import imports, modules, path_of


def packages() -> list[str]:
    return [m for m in modules() if path_of(m) is not None and path_of(m).name == "__init__.py"]  # type: ignore[union-attr]


def back_to(package: str) -> list[list[str]]:
    """Every path from the package's __init__ through its own submodules that imports it back."""
    cycles: list[list[str]] = []
    seen: set[str] = set()
    stack = [[package, sub] for sub in sorted(imports(package)) if sub.startswith(package + ".")]
    while stack:
        chain = stack.pop()
        module = chain[-1]
        if module in seen:
            continue
        seen.add(module)
        for target in sorted(imports(module)):
            if target == package:
                cycles.append(chain)
            elif target.startswith(package + "."):
                stack.append([*chain, target])
    return cycles


def test_the_walk_finds_packages_and_their_imports() -> None:
    assert "kvwatch.app.store" in packages() and "kvwatch.app.metrics_catalog" in packages()
    assert "kvwatch.app.store.sqlite" in imports("kvwatch.app.store")


def test_no_package_init_imports_a_submodule_that_imports_the_package_back() -> None:
    found = {package: chains for package in packages() if (chains := back_to(package))}
    assert found == {}

"""No module only re-exports another under a second name: a name has one home, imported from there
(app/periodic.py and app/transports.py were such aliases)."""

from __future__ import annotations

import ast

from tests.meta.imports import modules, path_of


def is_alias(tree: ast.Module) -> bool:
    """Nothing but a docstring, imports and `__all__`."""
    body = [node for node in tree.body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    return bool(body) and all(
        isinstance(node, ast.Import | ast.ImportFrom)
        or (isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["__all__"])
        for node in body
    )


def test_no_module_is_only_an_alias_of_another() -> None:
    aliases = []
    for module in modules():
        path = path_of(module)
        assert path is not None
        if path.name not in ("__init__.py", "__main__.py") and is_alias(ast.parse(path.read_text())):
            aliases.append(module)
    assert aliases == []


def test_an_alias_is_recognised() -> None:
    assert is_alias(ast.parse('"""doc"""\nfrom a import b\n__all__ = ["b"]\n'))
    assert not is_alias(ast.parse("from a import b\n\ndef f() -> None: ...\n"))

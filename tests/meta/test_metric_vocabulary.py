"""The metric catalog is the one vocabulary: a metric's name is written out in app/metrics_catalog and
read from there everywhere else in app/ and static/ (labels, units, charts, thresholds with it). Python
imports the constants of app/metrics_catalog/names.py; the page reads them from /api/catalog's `names`
(static/names.js).

Outside the catalog and the tests, a string literal equal to a catalogued metric name is an offender,
and there are none (issue #32 emptied the list of files that had some). parsers/, collectors/ and
simulator/ are not scanned: they may not import app/ (tests/test_layout.py), and the field names
parsers write are the record contract itself (docs/records.md).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path
from typing import get_args

from kvwatch.app.metrics_catalog import CATALOG, TOKEN_USAGE_HIGH
from kvwatch.app.metrics_catalog.names import (
    COMPLETION_RATE,
    COMPLETIONS,
    GEN_THROUGHPUT,
    Completions,
    Objective,
    by_constant,
)

ROOT = Path(__file__).resolve().parents[2]
CATALOG_DIR = ROOT / "app" / "metrics_catalog"
# Files where a word that is also a metric's name means something else: (the word, what it is there).
HOMONYMS: dict[str, tuple[str, str]] = {
    "app/config/server.py": ("token", "the API token"),
    "app/config/load.py": ("token", "the API token (a secret in a readable file)"),
    "app/store/redaction.py": ("token", "the API token"),
}
# The threshold's number elsewhere, where it means something else.
OTHER_095 = {
    "app/compare/stats.py": "CONFIDENCE: the confidence level of an interval",
    "app/diagnosis/predict.py": "USABLE_USAGE: how full SGLang's scheduler keeps a pool that limits it",
}


def python_files() -> list[Path]:
    return sorted(p for p in (ROOT / "app").rglob("*.py") if CATALOG_DIR not in p.parents)


def literals(path: Path) -> list[str]:
    """The catalogued metric names written as string literals in one file."""
    if path.suffix == ".py":
        found = [node.value for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in CATALOG]
    else:
        found = [name for name in re.findall(r"""["'`]([a-z_]+)["'`]""", path.read_text()) if name in CATALOG]
    homonym = HOMONYMS.get(str(path.relative_to(ROOT)), ("", ""))[0]
    return [name for name in found if name != homonym]


def offenders() -> Counter[str]:
    files = [*python_files(), *sorted((ROOT / "static").glob("*.js"))]
    return Counter({str(p.relative_to(ROOT)): n for p in files if (n := len(literals(p)))})


def test_no_metric_name_literal_outside_the_catalog() -> None:
    assert offenders() == {}, "read these metric names from app/metrics_catalog (file: count)"


def test_the_scan_sees_a_literal() -> None:
    assert literals(ROOT / "app" / "metrics_catalog" / "entries.py").count("token_usage") == 1


def test_every_name_constant_is_catalogued() -> None:
    # /api/catalog sends them all to the page as `names`.
    assert set(by_constant().values()) <= set(CATALOG)


def test_the_literal_types_of_names_are_their_constants() -> None:
    # mypy cannot build a Literal from a constant, so names.py writes these out a second time.
    assert get_args(Objective) == (GEN_THROUGHPUT, COMPLETION_RATE)
    assert get_args(Completions) == (COMPLETIONS,)


def test_the_token_usage_threshold_is_declared_once() -> None:
    places = []
    for path in [*(ROOT / "app").rglob("*.py"), *(ROOT / "static").glob("*.js")]:
        rel = str(path.relative_to(ROOT))
        if rel in OTHER_095:
            continue
        if path.suffix == ".py":
            count = sum(1 for node in ast.walk(ast.parse(path.read_text()))
                        if isinstance(node, ast.Constant) and node.value == TOKEN_USAGE_HIGH)
        else:
            count = len(re.findall(r"(?<![\d.])0\.95(?!\d)", path.read_text()))
        places += [rel] * count
    assert places == ["app/metrics_catalog/charts.py"]

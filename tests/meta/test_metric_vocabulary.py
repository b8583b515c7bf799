"""The metric catalog is the one vocabulary: a metric's name is written out in app/metrics_catalog and
read from there everywhere else in app/ and static/ (labels, units, charts, thresholds with it).

Outside the catalog and the tests, a string literal equal to a catalogued metric name is an offender.
REMAINING lists the files that still have some, with their count: the list may only shrink. A file
that gains one fails, and so does a file that loses one until its count here is lowered. parsers/,
collectors/ and simulator/ are not scanned: they may not import app/ (tests/test_layout.py), and the
field names parsers write are the record contract itself (docs/records.md).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from kvwatch.app.metrics_catalog import CATALOG, TOKEN_USAGE_HIGH

ROOT = Path(__file__).resolve().parents[2]
CATALOG_DIR = ROOT / "app" / "metrics_catalog"
# file -> metric-name literals still in it (to be read from the catalog instead)
REMAINING: dict[str, int] = {
    # merged the same day as this list: the campaign's objective and measured fields
    "app/campaign/measure.py": 7,
    "app/campaign/model.py": 3,
    "app/campaign/table.py": 6,
    "app/alerts/engine.py": 2,
    "app/config/alert_rules.py": 1,  # the default rules, moved from app/alerts/rules.py
    "app/config/campaign.py": 3,  # [hosts.campaign], moved from app/campaign/settings.py
    "app/alerts/signals.py": 7,
    "app/alerts/watches.py": 7,
    "app/api/host_status.py": 17,
    "app/commands/diagnose.py": 4,
    "app/compare/price.py": 3,
    "app/compare/render.py": 8,
    "app/compare/runstats.py": 8,
    "app/compare/steady.py": 7,
    "app/compare/table.py": 5,
    "app/diagnosis/accuracy.py": 6,
    "app/mcp/shape.py": 9,  # merged the same day as this list: its predicted/measured field keys
    "app/diagnosis/diagnose.py": 3,
    "app/diagnosis/predict.py": 5,
    "app/diagnosis/reading.py": 14,
    "app/diagnosis/service.py": 3,
    "app/diagnosis/snapshot.py": 30,
    "app/diagnosis/suggest.py": 2,
    "app/diagnosis/verdicts.py": 22,
    "app/pipeline/rows.py": 3,
    "app/report/data.py": 9,
    "app/runs/news.py": 2,
    "app/runs/registry.py": 2,
    "app/terminal/conditions.py": 5,
    "app/terminal/render.py": 8,
    "static/app.js": 2,
    "static/compare.js": 2,
    "static/nowrow.js": 9,
    "static/whatif.js": 6,
}
# Files where a word that is also a metric's name means something else: (the word, what it is there).
HOMONYMS: dict[str, tuple[str, str]] = {
    "app/config/server.py": ("token", "the API token"),
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


def test_no_metric_name_literal_outside_the_catalog_beyond_the_shrinking_list() -> None:
    found = offenders()
    grown = {f: (n, REMAINING.get(f, 0)) for f, n in found.items() if n > REMAINING.get(f, 0)}
    assert grown == {}, "read these metric names from app/metrics_catalog (found, allowed)"
    shrunk = {f: (found.get(f, 0), n) for f, n in REMAINING.items() if found.get(f, 0) < n}
    assert shrunk == {}, "lower REMAINING to what is left (found, allowed)"


def test_the_scan_sees_a_literal() -> None:
    assert literals(ROOT / "app" / "metrics_catalog" / "entries.py").count("token_usage") == 1


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

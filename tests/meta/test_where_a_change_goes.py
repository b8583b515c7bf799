"""ARCHITECTURE.md's "Where a change goes" table holds: each place it names exists, and the claims that a
change is one entry are tried by making exactly that edit in a copy of `app/` and running the result
(a new field in a known log line: a catalog entry; a new alert rule of an existing kind: a `RuleSpec`).
Nothing else of the copy is touched, so whatever the rest of the app derives from the entry has to
follow by itself."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TOP_LEVEL = ("app", "collectors", "parsers", "simulator", "static")


def table_rows() -> list[tuple[str, str]]:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("## Where a change goes\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 2 and cells[0] not in ("change", "---"):
            rows.append((cells[0], cells[1]))
    return rows


def test_every_place_the_table_names_exists() -> None:
    named = [path for _, place in table_rows() for path in re.findall(r"`([\w./-]+/[\w./-]*)`", place)]
    assert len(named) >= 10, named
    # a placeholder names the folder the new file goes in
    missing = [p for p in named if not (ROOT / p).exists() and not ("NAME" in p and (ROOT / p).parent.is_dir())]
    assert missing == []


def test_the_table_has_the_one_entry_changes() -> None:
    changes = {change: place for change, place in table_rows()}
    assert "`DEFAULT_RULES`, `app/config/alert_rules.py`" in changes["a new alert rule of an existing kind"]
    assert "`app/metrics_catalog/entries.py`" in changes["a new field in a known line (`#foo rate: 2.5`)"]
    assert "`CHARTS`, `app/metrics_catalog/charts.py`" in changes["a new chart, or a metric on a chart"]


def edited_copy(tmp: Path, module: str, anchor: str, entry: str) -> Path:
    """A `kvwatch` tree whose app/ is a copy with `entry` written before `anchor` in `module`."""
    tree = tmp / "tree" / "kvwatch"
    tree.mkdir(parents=True)
    for folder in TOP_LEVEL:
        if folder == "app":
            shutil.copytree(ROOT / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (tree / folder).symlink_to(ROOT / folder)
    edited = tree / module
    source = edited.read_text()
    assert source.count(anchor) == 1, f"{module}: the anchor {anchor!r} moved; update this test"
    edited.write_text(source.replace(anchor, entry + anchor))
    return tree.parent


def run_in(tree: Path, script: str) -> Any:
    """Run `script` with the copy imported instead of the repository's app/; its last line printed as JSON."""
    prelude = textwrap.dedent(f"""
        import kvwatch.app
        assert kvwatch.app.__file__.startswith({str(tree)!r}), kvwatch.app.__file__
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)], env=env, cwd=tree,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


NEW_FIELD_LINE = ("[2026-01-05 10:00:00 DP{dp} TP{dp}] Decode batch, #running-req: 40, #token: 90000, "
                  "token usage: 0.70, #frob rate: {rate}, gen throughput (token/s): 800.00, #queue-req: 0, ")
HOST_VALUE = """
    import json
    from kvwatch.app.metrics_catalog import CATALOG, info
    from kvwatch.app.pipeline.rows import LiveState, live_rows
    from kvwatch.parsers import create_parser

    parser = create_parser("sglang")
    line = {line!r}
    records = [*parser.feed(1, line.format(dp=0, rate="2.00")), *parser.feed(2, line.format(dp=1, rate="4.00"))]
    rows = live_rows(records, LiveState(), "server_log", "/log", now=1767607201.0)
    host = [s.v for s in rows.host_samples if s.metric == "frob_rate"]
    entry = info("frob_rate")
    print(json.dumps({{"parsed": [r.get("frob_rate") for r in records], "host": host, "known": entry.known,
                      "label": entry.label, "unit": entry.unit, "listed": "frob_rate" in CATALOG}}))
"""


def test_a_new_field_in_a_known_line_is_one_catalog_entry(tmp_path: Path) -> None:
    script = HOST_VALUE.format(line=NEW_FIELD_LINE)
    before = run_in(edited_copy(tmp_path / "before", "app/metrics_catalog/entries.py", "\n)\n", ""), script)
    # the parsers read the new pair already; uncatalogued, its meaning is a guess (a sum over ranks)
    assert before == {"parsed": [2.0, 4.0], "host": [6.0], "known": False, "label": "frob rate", "unit": "",
                      "listed": False}
    entry = '\n    _e("frob_rate", "1/s", "frobs per second", "mean"),'
    after = run_in(edited_copy(tmp_path / "after", "app/metrics_catalog/entries.py", "\n)\n", entry), script)
    assert after == {"parsed": [2.0, 4.0], "host": [3.0], "known": True, "label": "frobs per second",
                     "unit": "1/s", "listed": True}


NEW_RULE = '''
    RuleSpec(
        "queue_long", "threshold", "event", "queue long", "warn",
        params={"metric": "queue_req", "fire_at": 50.0, "stay_at": 40.0, "debounce": 0.0},
    ),'''
RULE_FIRES = """
    import json, tempfile
    from pathlib import Path
    from kvwatch.app.config import parse_config
    from kvwatch.app.errors import ConfigError
    from tests.alerts.recorded import T0, Rig

    try:
        parse_config({"hosts": [{"name": "g", "ssh": "local", "server_log": "x"}],
                      "alerts": {"queue_long": {"fire_at": "many"}}}, "kvwatch.toml")
        refused = ""
    except ConfigError as exc:
        refused = str(exc)
    rig = Rig(Path(tempfile.mkdtemp()) / "kv.db", alerts_table={"queue_long": {"fire_at": 20, "stay_at": 15}})
    rig.play_lines(T0, [{"token_usage": 0.5, "queue_req": q} for q in [5, 10, 30, 30]])  # decode lines
    alert = rig.alert("queue_long")
    print(json.dumps({"rules": [r.name for r in rig.rules()][-1], "state": rig.state("queue_long"),
                      "title": alert and alert.get("title"), "refused": refused}))
"""


def test_a_new_alert_rule_of_an_existing_kind_is_one_entry(tmp_path: Path) -> None:
    after = run_in(edited_copy(tmp_path, "app/config/alert_rules.py", "\n)\n# fmt: on", NEW_RULE), RULE_FIRES)
    assert after["rules"] == "queue_long"
    assert after["state"] == "firing"  # its table lowered fire_at to 20; the queue reached 30
    assert after["title"] == "queue long"
    assert "alerts.queue_long.fire_at" in after["refused"]  # its settings are validated like every rule's

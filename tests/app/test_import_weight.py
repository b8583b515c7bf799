"""What a collecting kvwatch process imports: pandas (about 85 MB of resident memory here) only when
something needs a DataFrame (an export, a report), never to collect, store and serve. The catch-up
memory target of BENCHMARKS.md counts on it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
import kvwatch.app.runner, kvwatch.app.main, kvwatch.app.cli
from kvwatch.app.main import create_app
print(",".join(sorted(m for m in ("pandas", "plotly.graph_objects", "polars") if m in sys.modules)))
"""


def test_serving_imports_no_pandas() -> None:
    loaded = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == ""


COLLECTING = """
import sys, time
from pathlib import Path
from tests.app.slice_helpers import append_lines, start_services
root = Path(sys.argv[1])


def stored():
    return len(services.store.series("local", "gen_throughput")[0])


def wait_stored(count):
    deadline = time.monotonic() + 60
    while stored() < count and time.monotonic() < deadline:
        time.sleep(0.1)
"""
AFTER = """
count = stored()
services.stop()
print(count, "pandas" in sys.modules, "pyarrow" in sys.modules)
"""
LIVE_ONLY = COLLECTING + """
append_lines(root / "server.log", 1, 50)  # a short backlog: the per-line path
services = start_services(root)
services.start_collectors()
wait_stored(50)
append_lines(root / "server.log", 51, 20)  # live lines
wait_stored(70)
""" + AFTER
CATCH_UP = COLLECTING + """
append_lines(root / "server.log", 1, 6000)  # a backlog: the columnar catch-up path (pyarrow)
services = start_services(root)
services.start_collectors()
wait_stored(6000)
""" + AFTER


def collect_in_a_process(script: str, root: Path) -> list[str]:
    """`script` run in a fresh interpreter: what it printed (stored count, pandas?, pyarrow?)."""
    done = subprocess.run([sys.executable, "-c", script, str(root)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_a_process_without_a_backlog_never_loads_pyarrow(tmp_path: Path) -> None:
    """pyarrow (35 MB resident here) is for catching up; a collector resuming where it stopped, with
    live lines only, goes without it (the 64-host footprint of BENCHMARKS.md)."""
    assert collect_in_a_process(LIVE_ONLY, tmp_path) == ["70", "False", "False"]


def test_an_export_still_loads_it_when_asked() -> None:
    probe = "import sys\nfrom kvwatch.app.export import series_frame\nprint('pandas' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "True"


def test_a_catch_up_stores_its_backlog_without_pandas(tmp_path: Path) -> None:
    assert collect_in_a_process(CATCH_UP, tmp_path) == ["6000", "False", "True"]


def test_the_host_collector_imports_neither_fastapi_nor_pyarrow() -> None:
    """What the 64-host fleet bench measures: a HostCollector and its store, without the web stack
    (pydantic comes with the typed config models)."""
    probe = ("import sys\nimport kvwatch.app.pipeline.collector, kvwatch.app.store.sqlite\n"
             "print(sorted(m for m in ('fastapi', 'pyarrow', 'pandas') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"

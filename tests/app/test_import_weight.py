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


LIVE_ONLY = """
import sys, time
from pathlib import Path
from tests.app.slice_helpers import append_lines, start_services
root = Path(sys.argv[1])
append_lines(root / "server.log", 1, 50)  # a short backlog: the per-line path
services = start_services(root)
services.start_collectors()
deadline = time.monotonic() + 60
while len(services.store.series("local", "gen_throughput")[0]) < 50 and time.monotonic() < deadline:
    time.sleep(0.1)
append_lines(root / "server.log", 51, 20)  # live lines
while len(services.store.series("local", "gen_throughput")[0]) < 70 and time.monotonic() < deadline:
    time.sleep(0.1)
stored = len(services.store.series("local", "gen_throughput")[0])
services.stop()
print(stored, "pandas" in sys.modules, "pyarrow" in sys.modules)
"""


def test_a_process_without_a_backlog_never_loads_pyarrow(tmp_path: Path) -> None:
    """pyarrow (35 MB resident here) is for catching up; a collector resuming where it stopped, with
    live lines only, goes without it (the 64-host footprint of BENCHMARKS.md)."""
    done = subprocess.run([sys.executable, "-c", LIVE_ONLY, str(tmp_path)], capture_output=True, text=True,
                          check=True, cwd=ROOT, timeout=120)
    assert done.stdout.split() == ["70", "False", "False"], done.stderr[-2000:]


def test_an_export_still_loads_it_when_asked() -> None:
    probe = "import sys\nfrom kvwatch.app.export import series_frame\nprint('pandas' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "True"


CATCH_UP = """
import sys, time
from pathlib import Path
from tests.app.slice_helpers import append_lines, start_services
root = Path(sys.argv[1])
append_lines(root / "server.log", 1, 6000)  # a backlog: the columnar catch-up path (pyarrow)
services = start_services(root)
services.start_collectors()
deadline = time.monotonic() + 60
while len(services.store.series("local", "gen_throughput")[0]) < 6000 and time.monotonic() < deadline:
    time.sleep(0.1)
stored = len(services.store.series("local", "gen_throughput")[0])
services.stop()
print(stored, "pandas" in sys.modules, "pyarrow" in sys.modules)
"""


def test_a_catch_up_stores_its_backlog_without_pandas(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CATCH_UP, str(tmp_path)], capture_output=True, text=True,
                          check=True, cwd=ROOT, timeout=120)
    assert done.stdout.split() == ["6000", "False", "True"], done.stderr[-2000:]


def test_the_host_collector_imports_neither_fastapi_nor_pyarrow() -> None:
    """What the 64-host fleet bench measures: a HostCollector and its store, without the web stack
    (pydantic comes with the typed config models)."""
    probe = ("import sys\nimport kvwatch.app.pipeline.collector, kvwatch.app.store.sqlite\n"
             "print(sorted(m for m in ('fastapi', 'pyarrow', 'pandas') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"

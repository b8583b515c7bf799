"""What a collecting kvwatch process imports: pandas (about 85 MB of resident memory here) only when
something needs a DataFrame (an export, a report), never to collect, store and serve. The catch-up
memory target of BENCHMARKS.md counts on it."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import kvwatch.app.runner, kvwatch.app.main, kvwatch.app.cli
from kvwatch.app.main import create_app
print(",".join(sorted(m for m in ("pandas", "plotly.graph_objects", "polars") if m in sys.modules)))
"""


def test_serving_imports_no_pandas() -> None:
    loaded = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == ""


def test_an_export_still_loads_it_when_asked() -> None:
    probe = "import sys\nfrom kvwatch.app.export import series_frame\nprint('pandas' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "True"

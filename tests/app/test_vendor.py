"""plotly.js as served to the page: the plotly package's file behind one compile-hint comment."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

import httpx

from kvwatch.app.main import create_app
from kvwatch.app.vendor import COMPILE_HINT
from tests.app.slice_helpers import start_services


def test_plotly_js_is_the_package_file_with_the_hint_and_revalidates(tmp_path: Path, serve_app: Any) -> None:
    server = serve_app(create_app(start_services(tmp_path)))
    package_file = Path(str(files("plotly") / "package_data" / "plotly.min.js")).read_bytes()
    first = httpx.get(f"{server.url}/vendor/plotly.min.js")
    assert first.status_code == 200
    assert first.headers["content-type"].startswith("text/javascript")
    assert first.content == COMPILE_HINT + package_file
    assert first.content.startswith(b"//# allFunctionsCalledOnLoad\n")
    assert first.headers["cache-control"] == "no-cache"
    again = httpx.get(f"{server.url}/vendor/plotly.min.js", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""
    stale = httpx.get(f"{server.url}/vendor/plotly.min.js", headers={"If-None-Match": '"something-else"'})
    assert stale.status_code == 200 and len(stale.content) == len(first.content)

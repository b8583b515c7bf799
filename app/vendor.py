"""plotly.js as the page loads it: the plotly package's own plotly.min.js, marked for eager compilation.

The bundle is 4.8 MB and V8 compiles its functions lazily, on the page's main thread, as plotly's
start-up calls them (~1 s of the page's load here). One leading comment, `//# allFunctionsCalledOnLoad`
(V8's explicit compile hint, Chromium 136+; other engines ignore it), moves that work to the
background thread that already parses the script while it downloads. The code itself is the
package's file, byte for byte, so a plotly upgrade needs nothing here.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import Response

PLOTLY_JS = Path(str(files("plotly") / "package_data" / "plotly.min.js"))
COMPILE_HINT = b"//# allFunctionsCalledOnLoad\n"
# Revalidated on every load (a 304 on loopback costs a few ms), so a plotly upgrade is never stale.
CACHE_CONTROL = "no-cache"

router = APIRouter(include_in_schema=False)


@cache
def _served(path: Path, mtime_ns: int) -> tuple[bytes, str]:
    body = COMPILE_HINT + path.read_bytes()
    return body, f'"plotly-{mtime_ns:x}-{len(body):x}"'


@router.get("/vendor/plotly.min.js")
def plotly_js(request: Request) -> Response:
    body, etag = _served(PLOTLY_JS, PLOTLY_JS.stat().st_mtime_ns)
    headers = {"ETag": etag, "Cache-Control": CACHE_CONTROL}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="text/javascript; charset=utf-8", headers=headers)

"""A kvwatch with demo-like data behind it: one local host fed with a real SGLang log and numbered
decode lines, collected by the real pipeline, served by a real uvicorn on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kvwatch.app.api.limits import Limits
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from tests.app.slice_helpers import append_lines, start_services, wait_until
from tests.fixtures.web import RunningServer, start_uvicorn

TOKEN = "hardening-s3cret-token-7f3a"
GOLDEN = Path(__file__).resolve().parent.parent / "parsers" / "cases" / "sglang" / "v0_5_23_full" / "input.log"
OPEN_LIMITS = Limits(mutations_per_minute=1e9, mutation_burst=10**9)


@dataclass
class World:
    services: Services
    server: RunningServer

    @property
    def url(self) -> str:
        return self.server.url


@contextmanager
def served_world(tmp: Path, limits: Limits = OPEN_LIMITS, lines: int = 400) -> Iterator[World]:
    # In time order: the numbered lines (Feb) before the golden ones (Nov). The other way round they
    # are eight months behind the log's watermark and quarantined (app/pipeline/watermark.py).
    append_lines(tmp / "server.log", 1, lines)
    with (tmp / "server.log").open("ab") as handle:
        handle.write(GOLDEN.read_bytes())
    services = start_services(tmp)
    app = create_app(services, limits=limits)
    app.state.api_token = TOKEN
    server = start_uvicorn(app)
    try:
        wait_until(lambda: len(services.store.series("local", "gen_throughput")[0]) >= lines, timeout=30)
        yield World(services, server)
    finally:
        server.stop()

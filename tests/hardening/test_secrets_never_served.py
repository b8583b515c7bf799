"""The monitored server's own secrets (SGLang's `api_key`/`admin_api_key` in its server_args dump, vLLM's
`--api-key` in its args) never reach an API answer, the compare table, the report or the store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from kvwatch.app.main import create_app
from tests.app.slice_helpers import append_lines, start_services, wait_until

API_KEY = "sk-live-7c1d0e5aa9f24b33"
ADMIN_KEY = "adm-51c0ffee2bd4"
SERVER_ARGS = (
    "[2026-02-24 11:{minute:02d}:00] server_args=ServerArgs(model_path='/models/Kimi-K2.5', tp_size=8, "
    "mem_fraction_static={fraction}, export_metrics_to_file_dir=None, api_key='{key}', "
    "admin_api_key='{admin}', served_model_name='kimi')\n"
)
CAPACITY = "[2026-02-24 11:{minute:02d}:30 TP0] max_total_num_tokens={tokens}, chunked_prefill_size=8192\n"
READY = "[2026-02-24 11:{minute:02d}:40] The server is fired up and ready to roll!\n"


def _write_two_runs(log: Path) -> None:
    with log.open("a") as handle:
        for minute, fraction, tokens in ((0, 0.85, 116000), (30, 0.88, 159000)):
            handle.write(SERVER_ARGS.format(minute=minute, fraction=fraction, key=API_KEY, admin=ADMIN_KEY))
            handle.write(CAPACITY.format(minute=minute, tokens=tokens))
            handle.write(READY.format(minute=minute))
    append_lines(log, 1, 600)  # 12:00:01 .. 12:10:00, after both starts


def _cli(*args: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "kvwatch.app", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_api_key_is_in_no_answer_report_or_store(tmp_path: Path, serve_app: Any) -> None:
    _write_two_runs(tmp_path / "server.log")
    services = start_services(tmp_path)
    server = serve_app(create_app(services))
    wait_until(lambda: len(services.store.series("local", "gen_throughput")[0]) == 600, timeout=30)
    base = server.url
    runs = httpx.get(f"{base}/api/runs", params={"host": "local"}).json()
    assert len(runs) >= 2, runs
    assert {run["flags"].get("mem-fraction-static") for run in runs} >= {0.85, 0.88}
    ids = ",".join(str(run["id"]) for run in runs)
    answers = {
        "runs": json.dumps(runs),
        "events": httpx.get(f"{base}/api/events", params={"host": "local"}).text,
        "status": httpx.get(f"{base}/api/hosts/local/status").text,
        "hosts": httpx.get(f"{base}/api/hosts").text,
        "compare": httpx.get(f"{base}/api/compare", params={"runs": ids}).text,
        "compare.md": httpx.get(f"{base}/api/compare", params={"runs": ids, "format": "markdown"}).text,
    }
    assert "server_args" in answers["events"] and "<redacted>" in answers["events"]
    answers["compare --list"] = _cli("compare", "--workdir", str(tmp_path), "--list", cwd=tmp_path)
    _cli("report", "--workdir", str(tmp_path), "--host", "local", "-o", str(tmp_path / "r.html"), cwd=tmp_path)
    answers["report"] = (tmp_path / "r.html").read_text()
    answers["offline compare"] = _cli("compare", str(tmp_path / "server.log"), cwd=tmp_path)
    for name, text in answers.items():
        assert API_KEY not in text and ADMIN_KEY not in text, name
    for path in tmp_path.glob("kvwatch.db*"):
        assert API_KEY.encode() not in path.read_bytes(), path

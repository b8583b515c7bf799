"""The answers' shapes without a server: trimming, the size bound, and a main install that never
imports the SDK."""

from __future__ import annotations

import json
import subprocess
import sys

from kvwatch.app.mcp.shape import ANSWER_LIMIT, fit, status_view, trimmed_status
from tests.terminal.demo import REPO

STATUS = {
    "host": "gpu1", "as_of": 1.0e9, "gen_throughput": 1234.5678, "token_usage": 0.97, "running_req": 120.0,
    "queue_req": 40.0, "completions": 500.0, "completion_rate": 2.5, "eta_s": 100.0, "alerts": [],
    "sampled_at": {"token_usage": 999_999_999.0}, "collector": {"state": "up"},
    "run": {"id": "gpu1-1", "state": "running", "flags": {f"flag-{i}": i for i in range(500)},
            "defining_flags": {"mem-fraction-static": 0.88}},
}


def test_status_keeps_the_runs_non_default_flags_unless_all_are_asked() -> None:
    assert trimmed_status(STATUS)["run"] == {"id": "gpu1-1", "state": "running", "flags": {"mem-fraction-static": 0.88}}
    assert trimmed_status(STATUS, all_flags=True) is STATUS
    assert trimmed_status({**STATUS, "run": None})["run"] is None


def test_the_status_view_gives_each_number_its_catalog_unit() -> None:
    view = status_view(STATUS, "kv_bound")
    assert view["now"]["token_usage"] == {"value": 0.97, "unit": "ratio", "label": "KV token usage",
                                          "sampled_at": 999_999_999.0}
    assert view["now"]["gen_throughput"]["unit"] == "tokens/s" and view["now"]["gen_throughput"]["value"] == 1234.5678
    assert view["run"]["non_default_flags"] == {"mem-fraction-static": 0.88}
    assert len(json.dumps(view, indent=2)) < ANSWER_LIMIT


def test_an_answer_past_the_limit_is_cut_and_says_what_was_cut() -> None:
    answer = {"verdict": "kv_bound", "evidence": [{"fact": "x" * 300, "n": i} for i in range(40)], "price": ["p"]}
    cut = fit(answer)
    assert len(json.dumps(cut, indent=2).encode()) <= ANSWER_LIMIT
    assert cut["truncated"] == ["evidence"] and cut["evidence"] == answer["evidence"][:len(cut["evidence"])]
    assert cut["price"] == ["p"] and len(cut["evidence"]) >= 5
    assert fit({"a": 1}) == {"a": 1}


def test_the_app_and_the_status_command_do_not_import_the_sdk() -> None:
    code = ("import sys, kvwatch.app.main, kvwatch.app.commands.status, kvwatch.app.mcp.shape; "
            "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "[]"

"""Terminal escapes from the monitored host (a flag value, an output folder's name, an error text)
reach `kvwatch status`, `wait`, `diagnose` and `compare --list` as visible text, never as escapes."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

from kvwatch.app.store import open_store
from kvwatch.app.store.base import Batch, EventRow
from kvwatch.app.terminal.safe import neutral_text, neutralised
from tests.terminal.answers import SATURATED
from tests.terminal.fake_api import fake_kvwatch

TITLE = "\x1b]0;owned\x07"  # sets the terminal's title
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"  # writes the clipboard (OSC 52)
FORGED = "\r\ngpu9  up  FIRING nothing"  # a line of the status that is not there
HOSTILE = TITLE + CLEAR + CLIPBOARD + FORGED


def kvwatch(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KVWATCH_URL"}
    return subprocess.run([sys.executable, "-m", "kvwatch.app", *args], capture_output=True, text=True,
                          timeout=60, env=env, cwd=cwd, check=False)


def test_the_one_function_shows_every_control_character() -> None:
    assert neutral_text("a\x1b[31mb\x9bc\u202ed\ne\tf") == "a\\x1b[31mb\\x9bc\\u202ed\ne\tf"
    assert neutralised({"k\x07": ["v\r\n", 1, None]}) == {"k\\x07": ["v\\x0d\\x0a", 1, None]}


def test_status_wait_and_diagnose_print_no_escape_from_the_host() -> None:
    status = copy.deepcopy(SATURATED)
    status["run"]["flags"]["served-model-name"] = HOSTILE
    status["run"]["defining_flags"]["served-model-name"] = HOSTILE
    status["completions_by_dataset"] = {HOSTILE: 1804.0}
    status["collector"] = {"state": "up", "last_error": HOSTILE}
    diagnosis = {"verdict": "kv_bound", "evidence": [{"fact": HOSTILE}], "suggestions": [{"action": HOSTILE}]}
    routes = {"/api/hosts": (200, [{"name": "gpu1"}]), "/api/hosts/gpu1/status": (200, status),
              "/api/hosts/gpu1/diagnosis": (200, diagnosis)}
    with fake_kvwatch(routes) as (url, _):
        outputs = {
            "status": kvwatch("status", "--url", url),
            "wait": kvwatch("wait", "--host", "gpu1", "--until", "ready", "--url", url, "--timeout", "5"),
            "diagnose": kvwatch("diagnose", "--host", "gpu1", "--url", url),
        }
    for name, done in outputs.items():
        assert done.returncode in (0, 124), (name, done.stderr)
        assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\r" not in done.stdout, name
        assert "\\x1b]0;owned\\x07" in done.stdout or name != "status", (name, done.stdout)
    assert "gpu9" not in outputs["status"].stdout.splitlines()[-1]  # no forged line of its own


def test_compare_list_prints_no_escape_from_a_logged_flag(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "kvwatch.db"))
    args = {"model_path": "/m", "kv_cache_dtype": HOSTILE, "mem_fraction_static": 0.88}
    event = EventRow("server_args", 1_800_000_000.0, 1, {"args": args})
    store.commit(Batch("gpu1", "server_log", "/l", events=[event]))
    store.close()
    done = kvwatch("compare", "--db", str(tmp_path / "kvwatch.db"), "--host", "gpu1", "--list")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout, done.stdout
    assert "\\x1b]52;c;" in done.stdout

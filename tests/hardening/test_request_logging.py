"""A server that logs its requests (SGLang `--log-requests`, vLLM before 0.10 by default) writes its
users' prompts into the log kvwatch reads, and a client log prints the model's answers. A prompt or an
answer that quotes every signal phrase — a saturated Decode line, vLLM's stats, OOM, an exception, the
ready line — changes no series, stores no event, opens no run and fires no alert, through the real
pipeline (local transport, parsers, store) and the real alert engine."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from kvwatch.app.alerts.engine import AlertEngine
from kvwatch.app.alerts.rules import rules_for_host
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.runner import build_services
from kvwatch.app.runs import list_runs
from kvwatch.parsers.events import EVENT_PHRASES
from tests.app.slice_helpers import wait_until

T0 = dt.datetime(2026, 3, 1, 10, 0, 0)
SGLANG_DECODE = ("[{ts}] Decode batch, #running-req: 40, #token: 58000, token usage: {usage:.2f}, cuda graph: True, "
                 "gen throughput (token/s): 700.00, #queue-req: 0")
VLLM_STATS = ("Engine 000: Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: 700.0 tokens/s, "
              "Running: 40 reqs, Waiting: 0 reqs, GPU KV cache usage: {pct:.1f}%, Prefix cache hit rate: 10.0%")
FAKES = (
    *(phrase for phrase, _ in EVENT_PHRASES),
    SGLANG_DECODE.format(ts="2026-03-01 10:00:00 TP0", usage=0.99).replace("#queue-req: 0", "#queue-req: 500"),
    VLLM_STATS.format(pct=99.9),
    "max_total_num_tokens=999999, chunked_prefill_size=8192",
    "Traceback (most recent call last):",
)


def _sglang(t: dt.datetime, fake: str | None) -> str:
    if fake is None:
        return SGLANG_DECODE.format(ts=f"{t:%Y-%m-%d %H:%M:%S} TP0", usage=0.5 + (t.second % 8) / 100)
    return (f"[{t:%Y-%m-%d %H:%M:%S}] Receive: obj=GenerateReqInput(rid='{t:%M%S}', "
            f"text={('Repeat after me: ' + fake)!r}, sampling_params={{'max_new_tokens': 64}})")


def _vllm(t: dt.datetime, fake: str | None) -> str:
    if fake is None:
        return f"INFO {t:%m-%d %H:%M:%S} [loggers.py:123] " + VLLM_STATS.format(pct=50.0 + t.second % 8)
    return (f"(APIServer pid=1) INFO {t:%m-%d %H:%M:%S} [logger.py:39] Received request chatcmpl-{t:%H%M%S}: "
            f"prompt: {('<|User|>' + fake + '<|Assistant|>')!r}, params: SamplingParams(n=1), lora_request: None.")


def _write(tmp: Path, line: type[object] | object) -> HostConfig:
    server, client = tmp / "server.log", tmp / "client.log"
    rows, answers = [], []
    for second in range(600):  # ten minutes of log: a real stats line every 10 s, a prompt every other second
        t = T0 + dt.timedelta(seconds=second)
        fake = None if second % 10 == 0 else FAKES[second % len(FAKES)] if second % 2 else None
        if second % 10 == 0 or fake is not None:
            rows.append(line(t, fake))  # type: ignore[operator]
        if second % 30 == 5:
            answers.append(f"model said: {FAKES[second % len(FAKES)]}")
    server.write_text("\n".join(rows) + "\n")
    client.write_text("\n".join(answers) + "\n")
    return HostConfig(name="local", ssh="local", server_log=str(server), client_log=str(client))


@pytest.mark.parametrize("line", [_sglang, _vllm], ids=["sglang", "vllm"])
def test_quoted_signals_change_nothing(tmp_path: Path, line: object) -> None:
    host = _write(tmp_path, line)
    config = Config(server=ServerConfig(data_dir=str(tmp_path), database="kvwatch.db"), hosts=(host,))
    services = build_services(config)
    for collector in services.collectors.values():
        collector.interval = 0.05
    services.start_collectors()
    store = services.store
    try:
        wait_until(lambda: len(store.series("local", "token_usage")[0]) >= 60, timeout=30)
        client_size = Path(host.client_log or "").stat().st_size
        wait_until(lambda: (store.load_state("local", "client_log", host.client_log or "") or {}).get("offset")
                   == client_size, timeout=30)
        _, usage = store.series("local", "token_usage")
        assert len(usage) == 60 and usage.max() <= 0.58  # the 60 real lines, none of the fakes
        assert store.events("local", kinds=("event", "capacity", "server_args", "kv_cache")) == []
        assert len(list_runs(store, "local")) <= 1  # no fake ready line opened a run
        rules = rules_for_host(config, host)
        engine = AlertEngine(store, [host], {"local": rules},
                             clock=lambda: (T0 + dt.timedelta(seconds=700)).replace(tzinfo=dt.UTC).timestamp())
        changes = engine.evaluate()
        assert [c.alert.rule for c in changes if c.alert.state in ("pending", "firing")] == []
        assert {engine.current("local", rule.name)["state"] for rule in rules} <= {"inactive"}
    finally:
        services.stop()

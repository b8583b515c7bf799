"""The demo's story on the simulator's engine, faster than real time: the fp8 run (150 in flight, no
queue), then the owner's veto and the 0.88 bf16 run that saturates; GPU memory as the demo's
nvidia-smi reports it. Read back only through the log, as the dashboard reads it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.compare import compare_runs, render
from kvwatch.app.compare.offline import load_logs
from kvwatch.app.compare.render import markdown_text
from kvwatch.app.config import HostConfig
from kvwatch.app.diagnosis import diagnose_host, host_verdict, predict_host
from kvwatch.app.runs import list_runs
from kvwatch.app.store.base import Batch, Sample
from kvwatch.simulator import startup
from kvwatch.simulator.capacity import GpuSpec
from kvwatch.simulator.clock import SimClock
from kvwatch.simulator.logwriter import LogWriter
from tests.compare.simplay import STORY_SPECS, play_campaign

FP8, BF16_088 = STORY_SPECS[2], STORY_SPECS[1]
MEASURED_085_TOKENS = 116_000  # the-run-it-serves.md


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("story") / "sglang_inference.log"
    played = play_campaign(path, (FP8, BF16_088), duration_s=1500.0, seed=3)
    store, (name,) = load_logs([path])
    total_mib = round(GpuSpec().total_gib * 1024)  # what the demo's nvidia-smi reports
    batch = Batch(name, "gpu", "nvidia-smi")
    batch.samples += [Sample("gpu_mem_total_mib", f"GPU{i}", played[0].start_epoch, float(total_mib)) for i in range(8)]
    store.commit(batch)
    host = HostConfig(name=name, ssh="local", server_log=str(path))
    runs = list_runs(store, name)
    now = played[-1].end_epoch  # the 0.88 run is live: its last line was just written
    return {"store": store, "host": host, "runs": runs, "now": now, "played": played}


def facts(body: dict[str, Any]) -> dict[str, Any]:
    return {item["metric"]: item["value"] for item in body["evidence"]}


def test_the_fp8_run_is_client_bound(story: dict[str, Any]) -> None:
    fp8 = story["runs"][0]
    assert fp8.flags["kv-cache-dtype"] == "fp8_e4m3"
    body = diagnose_host(story["store"], story["host"], run_id=fp8.id).as_dict()
    assert body["verdict"] == "client_bound", body
    assert facts(body)["queue_req"] == 0
    assert facts(body)["running_req"] == pytest.approx(150, abs=2)


def test_the_saturated_088_run_is_kv_bound_with_its_evidence(story: dict[str, Any]) -> None:
    body = diagnose_host(story["store"], story["host"], now=story["now"]).as_dict()
    assert body["run"] == story["runs"][1].id
    assert body["verdict"] == "kv_bound", body
    found = facts(body)
    assert found["token_usage"] >= 0.95
    assert found["queue_req"] >= 50
    assert found["running_req"] == pytest.approx(75, abs=8)
    # the suggestions carry their predicted effect: fp8 KV doubles the pool
    fp8 = next(s for s in body["suggestions"] if s["flags"] == {"kv-cache-dtype": "fp8_e4m3"})
    assert fp8["predicted"]["max_total_num_tokens"] == pytest.approx(2 * BF16_088.capacity().max_total_num_tokens,
                                                                     rel=0.001)


def test_from_the_088_run_085_predicts_the_measured_116k_and_093_runs_out_of_memory(story: dict[str, Any]) -> None:
    store, host, now = story["store"], story["host"], story["now"]
    lower = predict_host(store, host, {"mem-fraction-static": 0.85}, now=now)
    assert lower["max_total_num_tokens"] == pytest.approx(MEASURED_085_TOKENS, rel=0.05)
    assert lower["risks"] == []
    assert "nvidia-smi" in lower["basis"]["total_gpu_memory"]
    higher = predict_host(store, host, {"mem-fraction-static": 0.93}, now=now)
    assert [r["kind"] for r in higher["risks"]] == ["oom"]
    assert "out of memory" in higher["risks"][0]["message"]


def test_from_the_088_run_fp8_at_090_predicts_the_fp8_run(story: dict[str, Any]) -> None:
    fp8_run = story["runs"][0]
    body = predict_host(story["store"], story["host"], {"mem-fraction-static": 0.90, "kv-cache-dtype": "fp8_e4m3"},
                        now=story["now"])
    assert body["max_total_num_tokens"] == pytest.approx(fp8_run.capacity["max_total_num_tokens"], rel=0.01)
    assert body["running_req"] == pytest.approx(150, abs=3)  # the client's demand: no queue left
    assert body["queue_req"] <= 3
    fp8_truth = story["played"][0].truth(story["played"][0].start_epoch + 600, story["played"][0].end_epoch)
    assert body["gen_throughput"] == pytest.approx(fp8_truth["gen_throughput"], rel=0.1)
    assert body["risks"] == []


def test_the_compare_of_the_two_runs_ends_with_the_price_of_the_veto(story: dict[str, Any]) -> None:
    fp8, saturating = story["runs"]
    _, result = compare_runs(story["store"], [fp8, saturating], baseline=fp8.id, min_steady_s=300)
    (entry,) = result["summaries"]
    assert entry["run"] == saturating.id
    text = entry["sentence"]
    assert text.startswith("bf16 KV instead of fp8_e4m3, mem-fraction-static 0.88 instead of 0.9: -58 % KV tokens")
    assert result["summary"] == text + "."
    assert render(result, "markdown").rstrip().endswith(f"Price: {markdown_text(text)}.")  # flag values are text


def test_a_start_that_ran_out_of_memory_is_remembered_by_the_next_prediction(tmp_path: Path) -> None:
    """0.88 serves, then a restart at 0.93 dies in CUDA-graph capture (the simulator's OOM)."""
    path = tmp_path / "server.log"
    played = play_campaign(path, (BF16_088,), duration_s=900.0, seed=7)
    too_big = replace(BF16_088, mem_fraction_static=0.93)
    assert too_big.capacity().oom
    with path.open("a", encoding="utf-8") as out:
        log = LogWriter(out, too_big.fmt, SimClock(wall_start=played[0].end_epoch + 60), tp_size=8, pace=False)  # type: ignore[arg-type]
        startup.write_crash(log, too_big, startup.write_boot(log, too_big) + 1.0, "oom")
    store, (name,) = load_logs([path])
    host = HostConfig(name=name, ssh="local", server_log=str(path))
    failed = list_runs(store, name)[-1]
    assert failed.state == "failed"
    assert diagnose_host(store, host, now=played[0].end_epoch + 200).as_dict()["verdict"] == "unknown"
    assert host_verdict(store, host, now=played[0].end_epoch + 200) == "unknown"
    body = predict_host(store, host, {"mem-fraction-static": 0.93})
    assert body["run"] == list_runs(store, name)[0].id  # predicted from the config that did start
    likely = [r for r in body["risks"] if r.get("severity") == "likely"]
    assert likely and f"run {failed.id} ran out of memory" in likely[0]["message"]
    lower = predict_host(store, host, {"mem-fraction-static": 0.90})
    assert not any(r.get("severity") == "likely" for r in lower["risks"])


def test_the_fleet_s_verdict_alone_is_the_diagnosis_s_at_every_stage_of_the_story(story: dict[str, Any]) -> None:
    """Along both runs and after the last line; and a host with nothing stored."""
    store, host, played = story["store"], story["host"], story["played"]
    first, last = played[0], played[-1]
    instants = [first.start_epoch - 60, first.start_epoch + 5, first.start_epoch + 200, first.end_epoch - 1,
                last.start_epoch + 30, last.end_epoch - 1, last.end_epoch, last.end_epoch + 600]
    seen = set()
    for now in instants:
        whole = diagnose_host(store, host, now=now).verdict
        assert host_verdict(store, host, now=now) == whole, now
        seen.add(whole)
    assert seen == {"kv_bound", "idle"}, seen  # serving, and idle once the last line is 10 minutes old
    nothing = HostConfig(name="no-such-host", ssh="local", server_log="/nowhere.log")
    assert host_verdict(store, nothing) == diagnose_host(store, nothing).verdict == "unknown"

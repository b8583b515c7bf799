"""The diagnosis in words, checked: no share of nothing or of an unknown, every evidence item with its
numbers by name, one sentence for the page, and never a suggestion of a value the owner vetoed."""

from __future__ import annotations

import re
from typing import Any

from kvwatch.app.config.controller import ControllerConfig, VetoTable
from kvwatch.app.diagnosis import diagnose
from kvwatch.app.diagnosis.wording import num, share_of
from kvwatch.app.flags.schema import bundled_versions, load_bundled
from tests.diagnosis.literal import START, busy, window

PERCENT_OF_ZERO = re.compile(r"\d+%[^.;:]* of the 0\b")


def test_a_share_is_only_of_a_known_positive_whole() -> None:
    assert share_of(13.0, 0.0) is None and share_of(13.0, None) is None and share_of(None, 4.0) is None
    assert share_of(3.0, 4.0) == 0.75
    assert num(None, ".2f") == "unknown" and num(0.961, ".2f") == "0.96"


def test_retractions_with_no_admission_logged_are_no_percentage_of_zero() -> None:
    """13 requests sent back in a window whose prefill lines admitted none (they were admitted before)."""
    series = busy(usage=0.97, running=70, queue=40, throughput=900)  # no #new-seq at all
    result = diagnose(window(series, retractions=((START + 60, 6.0), (START + 200, 7.0))))
    assert result.verdict == "retracting"
    texts = [item["fact"] for item in result.evidence]
    assert not any(PERCENT_OF_ZERO.search(text) for text in texts), texts
    admitted = next(item for item in result.evidence if item["metric"] == "admitted")
    assert admitted["numbers"] == {"admitted": 0.0, "retracted_reqs": 13.0, "share": None}
    assert "no admission logged in the window" in admitted["fact"]


def test_unmeasured_numbers_are_said_unknown_not_zero() -> None:
    series = busy(usage=0.97, running=70, queue=40, throughput=900)
    del series["token_usage"]
    result = diagnose(window(series, retractions=((START + 60, 13.0),)))
    usage = next(item for item in result.evidence if item["metric"] == "token_usage")
    assert usage["fact"] == "token usage median unknown" and usage["numbers"] == {}


def test_every_evidence_item_has_its_numbers_and_the_diagnosis_one_sentence() -> None:
    series = busy(usage=0.96, running=72, queue=79, throughput=930.63, tokens=153_179)
    result = diagnose(window(series)).as_dict()
    assert result["sentence"] == "KV-bound: token usage 0.96 at 72 running, queue 79, 931 tok/s"
    for item in result["evidence"]:
        assert item["fact"] and item["numbers"][item["metric"]] == item["value"]


def _vetoes(*vetoes: VetoTable) -> Any:
    config = ControllerConfig(host="gpu1", launch="python -m sglang.launch_server", vetoes=vetoes)
    schema = load_bundled(bundled_versions()[-1])

    def check(flags: dict[str, Any]) -> tuple[str, ...]:
        veto = config.veto_for(schema, flags)
        return () if veto is None else (veto.reason,)

    return check


def test_a_vetoed_value_is_never_suggested_and_the_others_carry_their_effect() -> None:
    def predictor(flags: dict[str, object]) -> dict[str, object]:
        return {"max_total_num_tokens": 190_000, "running_req": 88.4, "gen_throughput": 1_105.2, "risks": []}

    series = busy(usage=0.96, running=72, queue=79, throughput=930.63, tokens=153_179)
    snapshot = window(series, flags={"mem-fraction-static": 0.88, "kv-cache-dtype": "auto"})
    free = diagnose(snapshot, predictor)
    assert {"kv-cache-dtype": "fp8_e4m3"} in [s["flags"] for s in free.suggestions]
    vetoes = _vetoes(VetoTable(flag="kv-cache-dtype", value="fp8*", reason="quality"),
                     VetoTable(flag="mem-fraction-static", value="0.9", reason="OOM seen"))
    vetoed = diagnose(snapshot, predictor, vetoes)
    flags = [s["flags"] for s in vetoed.suggestions if s["flags"]]
    assert flags and all(not vetoes(f) for f in flags)
    assert {"kv-cache-dtype": "fp8_e4m3"} not in flags and {"mem-fraction-static": 0.9} not in flags
    assert all(s["effect"] == "190,000 KV tokens, 88 running, 1,105 tok/s" for s in vetoed.suggestions if s["flags"])

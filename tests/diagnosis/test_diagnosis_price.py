"""The price of a config choice in one sentence, on a literal comparison and in the rendered table."""

from __future__ import annotations

from typing import Any

from kvwatch.app.compare.price import price, sentence
from kvwatch.app.compare.render import markdown_text, to_markdown


def comparison() -> dict[str, Any]:
    """The story's two configs as /api/compare answers them, the fp8 run as the baseline."""
    def row(metric: str, values: list[float | None], change: list[float | None]) -> dict[str, Any]:
        return {"metric": metric, "label": metric, "unit": "tokens" if metric.startswith("max") else "requests",
                "values": values, "change_pct": change, "within_noise": [None, False], "status": ["steady"] * 2,
                "p5": [None, None], "p95": [None, None], "ci": [None, None]}

    steady = {"status": "steady", "start_offset_s": 600.0, "end_offset_s": 1500.0, "auto": True, "message": ""}
    return {
        "baseline": "gpu1-fp8",
        "runs": [{"id": "gpu1-fp8", "label": "fp8", "steady": steady},
                 {"id": "gpu1-bf16", "label": "bf16", "steady": steady}],
        "flag_diff": [
            {"flag": "mem-fraction-static", "values": [0.90, 0.88]},
            {"flag": "kv-cache-dtype", "values": ["fp8_e4m3", "auto"]},
            {"flag": "enable-hierarchical-cache", "values": [True, True]},
        ],
        "rows": [
            row("max_total_num_tokens", [376_000, 159_000], [0.0, -57.7]),
            row("running_req", [150, 72], [0.0, -52.0]),
            row("token_usage", [0.62, 0.96], [0.0, 54.8]),
            row("queue_req", [0, 79], [None, None]),
            row("gen_throughput", [1385, 930], [0.0, -32.9]),
        ],
    }


def test_the_veto_of_fp8_in_one_sentence() -> None:
    result = comparison()
    assert sentence(result, 1, 0) == ("bf16 KV instead of fp8_e4m3, mem-fraction-static 0.88 instead of 0.9: "
                                      "-58 % KV tokens, -52 % concurrency, -33 % tok/s, queue 0 -> 79")
    assert price(result) == [{"run": "gpu1-bf16", "sentence": sentence(result, 1, 0)}]


def test_missing_numbers_say_so_instead_of_inventing_them() -> None:
    result = comparison()
    result["rows"] = [r for r in result["rows"] if r["metric"] != "gen_throughput"]
    result["rows"][0]["change_pct"] = [0.0, None]
    assert sentence(result, 1, 0).endswith("n/a KV tokens, -52 % concurrency, n/a tok/s, queue 0 -> 79")


def test_the_markdown_table_ends_with_the_price() -> None:
    result = comparison()
    result["summaries"] = price(result)
    text = to_markdown(result)
    assert text.rstrip().splitlines()[-1] == f"Price: {markdown_text(sentence(result, 1, 0))}."  # flag values stay text

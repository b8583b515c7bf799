"""`kvwatch report`: one self-contained HTML page from a real store (three runs of a generated SGLang
log through the real parsers), with charts that render in Chromium with every network request refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from plotly.offline import get_plotlyjs

from kvwatch.app.cli import main
from kvwatch.app.metrics_catalog import CHARTS, TOKEN_USAGE_HIGH


def report(config: Path, out: Path, *args: str) -> str:
    assert main(["report", "--config", str(config), "-o", str(out), *args]) == 0
    return out.read_text()


def summary_points(page: str, metric: str) -> int:
    match = re.search(rf"<tr><td>{metric}</td><td>(\d+)</td>", page)
    assert match, f"no summary row for {metric}"
    return int(match.group(1))


def test_whole_history_report_is_self_contained(collected: tuple[Path, list[str]], tmp_path: Path) -> None:
    config, ids = collected
    page = report(config, tmp_path / "r.html")
    assert len(ids) == 3
    assert page.count("Plotly.newPlot(") == 1
    bundle = get_plotlyjs()
    assert page.count(bundle) == 1  # plotly.js, from the installed package, inside the file
    ours = page.replace(bundle, "")
    assert not re.search(r'(src|href)=["\']?(https?:)?//', ours), "the page must not load anything from the network"
    # The report draws the catalog's charts: each one with data under its title (a title cut at "/",
    # which JSON in the page escapes), the usage chart with its threshold line.
    for chart in CHARTS[:3]:
        assert f'"text":"{chart.title.split("/")[0]}' in page, chart.title
    assert f'"y0":{TOKEN_USAGE_HIGH},"y1":{TOKEN_USAGE_HIGH}' in page
    assert "Comparison of this host&#x27;s runs" in page or "Comparison of this host's runs" in page
    assert "baseline: --mem-fraction-static 0.85" in page
    assert "+37%" in page  # the 0.88 + HiCache config's KV tokens against the baseline, as in compare's table
    assert summary_points(page, "token_usage") > 1000


def test_one_run_report_shows_its_flags_and_only_its_window(collected: tuple[Path, list[str]], tmp_path: Path) -> None:
    config, ids = collected
    whole = summary_points(report(config, tmp_path / "all.html", "--no-compare"), "token_usage")
    page = report(config, tmp_path / "one.html", "--run", ids[1])
    assert f"run {ids[1]}" in page
    assert "<td>--mem-fraction-static</td><td>0.88</td>" in page
    assert "max_total_num_tokens" in page
    assert 0 < summary_points(page, "token_usage") < whole / 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "gpu9"], "--host: no host named 'gpu9'"),
        (["--run", "nope"], "--run: no run 'nope' on host 'gpu1'"),
        (["--run", "x", "--since", "2026-02-24T12:00:00"], "--run: give a run or a --since/--until window"),
    ],
)
def test_bad_choices_are_one_line_errors(
    collected: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    config, _ = collected
    assert main(["report", "--config", str(config), "-o", str(tmp_path / "x.html"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kvwatch: error: ") and message in err[0], err
    assert not (tmp_path / "x.html").exists()


def test_missing_database_is_not_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "kvwatch.toml"
    config.write_text(f'[server]\ndata_dir = "{tmp_path}"\n\n[[hosts]]\nname = "a"\nssh = "local"\nserver_log = "/x"\n')
    assert main(["report", "--config", str(config)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "kvwatch.db").exists()


@pytest.mark.browser
def test_report_renders_offline_in_chromium(collected: tuple[Path, list[str]], tmp_path: Path, page: Any) -> None:
    config, _ = collected
    out = tmp_path / "report.html"
    report(config, out)
    refused: list[str] = []

    def route(route: Any) -> None:
        if route.request.url.startswith(("file:", "data:", "blob:", "about:")):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", route)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(out.as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    assert page.locator(".js-plotly-plot .scatterlayer .trace").count() >= 4  # usage, running, queued, gen tok/s
    assert refused == [] and errors == []
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)


def test_the_report_draws_a_count_sampled_on_change_as_steps() -> None:
    """Completions are sampled when the count moves (the catalog's `sampling`): held between samples."""
    import numpy as np

    from kvwatch.app.report.data import ReportData, Window
    from kvwatch.app.report.html import figure

    t = np.array([0.0, 2.0, 200.0])
    data = ReportData("gpu1", Window(), 300.0, series={"completions": (t, np.array([1.0, 2.0, 3.0])),
                                                        "token_usage": (t, np.array([0.5, 0.6, 0.7]))})
    fig = figure(data)
    assert fig is not None
    legend = {trace.metric: trace.legend for chart in CHARTS for trace in chart.traces}  # the catalog's words
    shapes = {trace.name: trace.line.shape for trace in fig.data}
    assert shapes[legend["completions"]] == "hv" and shapes[legend["token_usage"]] is None, shapes

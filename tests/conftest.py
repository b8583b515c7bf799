"""Shared fixtures live in tests/fixtures/ and are registered here, explicitly.

Tests that start a real component are marked by the fixtures they use (and by their folder for the
browser), so `make check` can leave them out without every test having to remember its marker.

`make test` runs the suite on pytest-xdist workers, `--dist loadgroup --no-loadscope-reorder` (see
the Makefile). Most of the suite waits (on sshd, PostgreSQL, Chromium, a demo playing in real time),
so more workers than cores pay off. What may run side by side is decided here, in one place, from a
test's node id (tests/fixtures/scheduling.py says why not by `xdist_group` marks):
- MODULE_GROUPS: a module whose tests share a module-scoped fixture (a demo started once, a built
  wheel, a network namespace) runs on one worker, so the fixture is set up once, as in a serial run,
  not once on every worker that picks up one of its tests. Collection fails when a test uses a
  module-scoped fixture and its module is not listed, so the list cannot fall behind.
- SERIAL: tests whose assertion is a timing bound that other tests' load can break. They run one after
  another on one worker, last, when the other workers are finishing the short tests (each with its
  reason).
- START_FIRST: the longest tests, longest first, so the run does not end with one worker still playing
  an 11-minute story; each worker's first long test has a short one queued behind it (a worker holds
  its next test while running the current one, so a long test queued behind another would wait).
A serial run (`-n 0`) keeps the files' order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest_plugins = ["tests.fixtures.web", "tests.fixtures.sshd", "tests.fixtures.postgres"]

# fixture name -> the marker of the real component it starts
COMPONENT_FIXTURES: dict[str, str] = {
    "sshd": "sshd",
    "netns_host": "sshd",
    "pg_cluster": "postgres",
    "pg_url": "postgres",
    "page": "browser",
    "context": "browser",
    "browser": "browser",
}
BROWSER_FOLDER = "tests/browser/"
COMPONENT_MARKERS = ("browser", "sshd", "postgres", "promtool")
# Modules whose tests start kvwatch (serve, collect, demo) or the simulated SGLang server or client as
# processes of their own and wait on them: marked `process`, so `make check` leaves them out with the
# real components (tests/meta/test_check_tier.py keeps the list true). `make test` runs them all.
PROCESS_MODULES: tuple[str, ...] = (
    "tests/campaign/test_campaign_demo.py",
    "tests/campaign/test_campaign_page.py",
    "tests/campaign/test_campaign_survives.py",
    "tests/campaign/test_campaign_hosts_api.py",
    "tests/alerts/test_alert_one_sender.py",
    "tests/compare/test_simulated_story.py",
    "tests/controller/test_demo_state_dir.py",
    "tests/controller/test_restart_local.py",
    "tests/diagnosis/test_diagnosis_demo.py",
    "tests/ecosystem/test_cli_conventions.py",
    "tests/ecosystem/test_grafana.py",
    "tests/ecosystem/test_heartbeat.py",
    "tests/ecosystem/test_progress.py",
    "tests/ecosystem/test_scaleout.py",
    "tests/ecosystem/test_store_options.py",
    "tests/fleet/test_demo_fleet.py",
    "tests/hardening/test_config_faults.py",
    "tests/hardening/test_connection_budget.py",
    "tests/hardening/test_controller_faults.py",
    "tests/hardening/test_secrets_never_served.py",
    "tests/hardening/test_soak.py",
    "tests/hardening/test_token_and_flag_policy.py",
    "tests/mcp/test_mcp_demo.py",
    "tests/simulator/test_client.py",
    "tests/simulator/test_demo.py",
    "tests/simulator/test_demo_campaign.py",
    "tests/simulator/test_demo_wheel.py",
    "tests/simulator/test_server.py",
    "tests/terminal/test_against_the_demo.py",
    "tests/test_packaging.py",
)
# Modules that spend a fuzzing budget (minutes): marked `slow`, like the soak.
BUDGET_MODULES: tuple[str, ...] = (
    "tests/hardening/test_openapi_fuzz.py",
    "tests/hardening/test_parser_fuzz.py",
)

# Modules with a module-scoped fixture: their tests run on one worker.
MODULE_GROUPS: frozenset[str] = frozenset({
    "tests/app/test_clock_ssh.py",
    "tests/collectors/test_partition.py",
    "tests/collectors/test_ssh_banner.py",
    "tests/compare/test_comparison_table.py",
    "tests/compare/test_rate_source.py",
    "tests/compare/test_simulated_story.py",
    "tests/controller/test_sglang_schema.py",
    "tests/diagnosis/test_diagnosis_accuracy.py",
    "tests/diagnosis/test_diagnosis_api.py",
    "tests/diagnosis/test_diagnosis_first_seconds.py",
    "tests/diagnosis/test_diagnosis_restart_seconds.py",
    "tests/diagnosis/test_diagnosis_story.py",
    "tests/diagnosis/test_diagnosis_vllm.py",
    "tests/hardening/test_markup_escaping.py",
    "tests/hardening/test_openapi_fuzz.py",
    "tests/mcp/test_mcp_demo.py",
    "tests/simulator/test_engine.py",
    "tests/terminal/test_against_the_demo.py",
    "tests/test_packaging.py",
})

# node id prefix -> why it cannot share the machine with the other tests listed here
SERIAL: dict[str, str] = {
    "tests/browser/test_live_resume.py::test_a_point_is_drawn_within_frames_not_a_second":
        "the median delay from a line to its drawn point must stay under 0.5 s (Chromium's frames)",
    "tests/store/test_store_readers.py::test_an_api_read_is_not_blocked_by_a_long_write_transaction":
        "two API reads beside an open write transaction must answer within 1 s",
    "tests/alerts/test_alert_one_sender.py::test_a_lone_app_evaluates_at_once":
        "a lone app's first evaluation and webhook within 1 s of its start",
    "tests/app/test_periodic.py::test_stop_ends_a_long_wait_at_once_and_the_thread_is_gone":
        "a loop's stop within 1 s",
    "tests/browser/test_demo_clock.py::test_every_chart_shows_each_restart_at_the_same_instant":
        "the old server's last point on all six charts within 6 s: at load 20+ the completions chart's "
        "came 6.3 s early once (the simulator's output writer fell behind)",
    "tests/collectors/test_host.py::test_live_copytruncate_loses_nothing":
        "three copytruncate rotations over sshd drained within 90 s: 3 s alone, but it timed out twice in "
        "the 6-worker suite on 2026-12-06 (beside the demo stories and browsers)",
    "tests/hardening/test_connection_budget.py::test_idle_connections_cannot_starve_the_server":
        "the page must answer within 15 s of 300 idle connections against a 256-descriptor limit",
    "tests/hardening/test_soak.py::test_soak_no_line_lost_or_doubled_under_kills_drops_and_rotations":
        "4 hosts at 1,200 lines/s each for 90 s, and the collector's RSS must stay flat: beside the demo "
        "stories its RSS grew 94 -> 250 MB (it fell behind), and once a line was stored twice",
}
SERIAL_GROUP = "serial"

# The longest tests (or modules, when grouped), longest first: seconds of one run at 6 workers
# (2026-12-04, load 20-75) in the comments.
START_FIRST: tuple[str, ...] = (
    "tests/browser/test_demo_story.py",  # 662 s: the demo's story at real speed
    "tests/campaign/test_campaign_survives.py",  # 350 s: kill -9 and a second kvwatch; a person's restart
    "tests/campaign/test_campaign_demo.py",  # 270-350 s a test: a campaign on the demo at --speed 8
    "tests/campaign/test_campaign_page.py",  # about 350 s: the page watches a campaign
    "tests/diagnosis/test_diagnosis_demo.py",  # 297 s
    "tests/mcp/test_mcp_demo.py",  # about 200 s: a demo for the module, its story to the last run
    "tests/terminal/test_against_the_demo.py",  # about 300 s: a demo for the module, then `kvwatch wait`
    "tests/browser/test_controller_whatif.py",  # 260 s
    "tests/simulator/test_demo.py::test_story_is_the_campaign_on_the_real_clock",  # 131 s
    "tests/simulator/test_demo_campaign.py",  # 60-120 s: each config measured from the store
    "tests/simulator/test_demo_wheel.py",  # 60-120 s a test: a restart 40 s into the demo
    "tests/test_packaging.py",  # 130 s: a wheel built and installed in a venv
    "tests/browser/test_demo_page.py",  # 95 s
    "tests/browser/test_demo_now.py",
)


def group_of(node_id: str) -> str | None:
    """The group a test runs in (on one worker, one test after another), or None for a test alone."""
    if node_id.startswith(tuple(SERIAL)):
        return SERIAL_GROUP
    module = node_id.split("::", 1)[0]
    return module if module in MODULE_GROUPS else None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.fixtures.scheduling import NodeIdGroupScheduling

    return NodeIdGroupScheduling(config, log, group_of)


def _mark_components(item: pytest.Item) -> None:
    names = set(getattr(item, "fixturenames", ()))
    wanted = {marker for fixture, marker in COMPONENT_FIXTURES.items() if fixture in names}
    node = item.nodeid.replace("\\", "/")
    if BROWSER_FOLDER in node:
        wanted.add("browser")
    module = node.split("::", 1)[0]
    if module in PROCESS_MODULES:
        wanted.add("process")
    if module in BUDGET_MODULES:
        wanted.add("slow")
    callspec = getattr(item, "callspec", None)
    if callspec is not None and str(callspec.params.get("store_url", "")).startswith("postgres"):
        wanted.add("postgres")
    for marker in sorted(wanted - {m.name for m in item.iter_markers()}):
        item.add_marker(getattr(pytest.mark, marker))


def _uses_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs[-1].scope in ("module", "class", "package") for defs in info.name2fixturedefs.values() if defs)


def _rank(item: pytest.Item) -> tuple[int, int]:
    for index, prefix in enumerate(START_FIRST):
        if item.nodeid.startswith(prefix):
            return 0, index
    if group_of(item.nodeid) == SERIAL_GROUP:
        return 3, 0
    if any(item.get_closest_marker(name) is not None for name in COMPONENT_MARKERS):
        return 1, 0
    return 2, 0


def _start_order(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """The first `workers` units of START_FIRST, then `workers` short tests, then the rest of
    START_FIRST, the tests of real components, the pure ones, and SERIAL last.

    xdist hands the first units out one per worker, then a second round one per worker (queued behind
    the first: a worker holds its next test while it runs one); the second round is short tests, so no
    long test waits behind another long one."""
    ordered = sorted(items, key=_rank)
    long_units: list[list[pytest.Item]] = []
    for item in ordered:
        if _rank(item)[0] != 0:
            break
        if long_units and _rank(item) == _rank(long_units[-1][0]):
            long_units[-1].append(item)  # a grouped module: one unit
        else:
            long_units.append([item])
    rest = ordered[sum(len(unit) for unit in long_units):]
    short = [item for item in rest if _rank(item)[0] == 2 and group_of(item.nodeid) is None][:workers]
    first = [item for unit in long_units[:workers] for item in unit] + short
    later_long = [item for unit in long_units[workers:] for item in unit]
    return first + later_long + [item for item in rest if item not in short]


# A wrapper: the markers go on before any other plugin's hook runs (`-m` deselects by them), and the
# start order is set after all of them (pytest's own hook groups tests by their fixtures' params).
@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    ungrouped = sorted({item.nodeid.split("::", 1)[0] for item in items
                        if _uses_module_fixture(item) and group_of(item.nodeid) is None})
    if ungrouped:
        raise pytest.UsageError(f"tests/conftest.py: add to MODULE_GROUPS (a module-scoped fixture): {ungrouped}")
    for item in items:
        _mark_components(item)
    result = yield
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        # Every worker sorts alike, so their collections still match.
        items[:] = _start_order(items, int(workerinput["workercount"]))
    return result

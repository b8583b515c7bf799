"""Runs: a run is one server start with its flags and capacity (see detect.py for how they are found)."""

from __future__ import annotations

from kvwatch.app.runs.detect import detect_runs
from kvwatch.app.runs.model import Run, flag_name, normalize_flags
from kvwatch.app.runs.registry import RUN_DOC, current_run, find_runs, list_runs, record_controller_run

__all__ = [
    "RUN_DOC",
    "Run",
    "current_run",
    "detect_runs",
    "find_runs",
    "flag_name",
    "list_runs",
    "normalize_flags",
    "record_controller_run",
]

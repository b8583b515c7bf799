"""Runs `simulator.server` in this process with SGLang's command line plus `--sim-*` flags from the
environment (SIM_ARGS), so that the launch line stays pure SGLang and the process keeps its cmdline."""

from __future__ import annotations

import os
import runpy
import shlex
import sys

sys.argv = ["kvwatch.simulator.server", *sys.argv[1:], *shlex.split(os.environ.get("SIM_ARGS", ""))]
runpy.run_module("kvwatch.simulator.server", run_name="__main__", alter_sys=True)

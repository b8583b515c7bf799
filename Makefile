# The two set-up commands: `make demo [PORT=N]` and `make test`; `make dev` and `make check` while working.
PORT ?= 8765
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# SGLang's own argument parser, for the test that regenerates app/flags/sglang-0.5.23.json. It imports
# torch, so it lives in a venv of its own (about 90 s and 2.3 GB; torch 2.13.0 is the CPU build on disk).
SGLANG_VENV := .venv-sglang
SGLANG_LIGHT_DEPS := numpy orjson psutil pybase64 requests triton packaging pillow starlette pydantic pyzmq \
	tqdm ipython aiohttp msgspec
# Real components the tests start themselves (never mocked): sshd, Chromium, PostgreSQL, promtool.
DEB_PACKAGES := openssh-server chromium postgresql
DEB_NO_RECOMMENDS := prometheus
PYTEST_ARGS ?=
# `make test` runs on pytest-xdist workers: most of the suite waits on sshd, PostgreSQL, Chromium or a
# demo playing in real time, so more workers than cores pay off (measured in README "Tests").
# `--dist loadgroup` keeps each xdist_group on one worker (tests/conftest.py says which and why);
# without reordering, the workers take the long tests first as tests/conftest.py sorts them.
# TEST_WORKERS=0 (or PYTEST_ARGS="-n 0", which comes last and wins) runs serially.
TEST_WORKERS ?= 6
XDIST_ARGS := -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

.PHONY: demo test check lint dev mypy-root system-packages clean

$(VENV)/.base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(PY) -m pip install -q -e '.[test]'
	touch $@

$(SGLANG_VENV)/.ready:
	$(PYTHON) -m venv $(SGLANG_VENV)
	$(SGLANG_VENV)/bin/python -m pip install -q --no-deps sglang==0.5.23
	$(SGLANG_VENV)/bin/python -m pip install -q torch==2.13.0 $(SGLANG_LIGHT_DEPS)
	touch $@

demo: $(VENV)/.base
	$(VENV)/bin/kvwatch demo --host 127.0.0.1 --port $(PORT)

system-packages:
	@missing=""; for p in $(DEB_PACKAGES) $(DEB_NO_RECOMMENDS); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then echo "system packages present"; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "installing:$$missing"; \
	  apt-get -o DPkg::Lock::Timeout=300 update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
	    $(filter-out $(DEB_NO_RECOMMENDS),$(DEB_PACKAGES)) && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
	    $(DEB_NO_RECOMMENDS); \
	else echo "missing Debian packages:$$missing (run as root to install them)"; fi

test: system-packages $(VENV)/.test $(SGLANG_VENV)/.ready
	KVWATCH_REQUIRE_COMPONENTS=1 KVWATCH_SGLANG_PYTHON=$(abspath $(SGLANG_VENV))/bin/python \
	  $(PY) -m pytest $(XDIST_ARGS) $(PYTEST_ARGS)

# mypy reads kvwatch/ as it is installed: a tree of links to the top-level folders (the editable
# install's import hook is invisible to it).
MYPY_ROOT := $(VENV)/mypy-root/kvwatch

# The fast tier while working: every test that needs no real component (no sshd, Chromium, PostgreSQL
# or promtool, no kvwatch or simulated server started as a process, no fuzzing budget: tests/conftest.py
# marks them by fixture, folder and its PROCESS_MODULES/BUDGET_MODULES tuples), then ruff and mypy.
# 4 workers on 2 cores: a few tests wait (on a subprocess, a timer). `make test` stays the full suite CI runs.
CHECK_MARKERS := not (sshd or browser or postgres or promtool or process or slow)
CHECK_WORKERS ?= 4

check: $(VENV)/.test mypy-root
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -n $(CHECK_WORKERS) --dist loadgroup -m "$(CHECK_MARKERS)" $(PYTEST_ARGS)

lint: $(VENV)/.test mypy-root
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

mypy-root:
	@mkdir -p $(MYPY_ROOT) && for d in app collectors parsers simulator; do ln -sfn $(abspath $$d) $(MYPY_ROOT)/$$d; done

# A working copy an editor understands: the editable install (`kvwatch.*` resolves to the top-level
# folders through its import hook) and the tree of links static tools read (mypy_path in pyproject.toml;
# point an editor's extra paths at .venv/mypy-root too).
dev: $(VENV)/.test mypy-root

clean:
	rm -rf $(VENV) $(SGLANG_VENV) test-artifacts

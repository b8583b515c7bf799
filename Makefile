# The two set-up commands: `make demo [PORT=N]` and `make test`.
PORT ?= 8765
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Real components the tests start themselves (never mocked): sshd, Chromium, PostgreSQL, promtool.
DEB_PACKAGES := openssh-server chromium postgresql
DEB_NO_RECOMMENDS := prometheus
PYTEST_ARGS ?=

.PHONY: demo test lint system-packages clean

$(VENV)/.base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(PY) -m pip install -q -e '.[test]'
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

test: system-packages $(VENV)/.test
	KVWATCH_REQUIRE_COMPONENTS=1 $(PY) -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) test-artifacts

VENV ?= .venv
PY := $(VENV)/bin/python
# The LiteLLM proxy of the compatibility suite lives in its own environment, never in $(VENV).
LITELLM_VENV ?= .ci-litellm
LITELLM := $(abspath $(LITELLM_VENV))/bin/litellm
# tests/compat finds the proxy through this variable and skips, saying why, when it is absent.
export SCRIPTORIUM_LITELLM ?= $(if $(wildcard $(LITELLM)),$(LITELLM),)

.PHONY: install demo test test-oldest test-slow compat-env browser-env lint ci

# A virtual environment with the project and its dev extras, rebuilt when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed

# The main job on the bundled offline profile: no key, no network.
demo: install
	$(VENV)/bin/scriptorium run extract/contact -p offline -a document=examples/contact.txt

# The fast suite: everything but the tests marked slow (benchmarks at smoke size, a real Ray
# cluster, the compatibility suite), spread over TEST_WORKERS processes (pytest-xdist); about four
# minutes on two cores. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: install
	$(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS)

# The fast suite again on the oldest SDK releases the extras' ranges allow (constraints/oldest.txt),
# in its own environment: supported versions are tested at both ends.
OLDEST_VENV ?= .venv-oldest
$(OLDEST_VENV)/.installed: pyproject.toml constraints/oldest.txt
	python3 -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(OLDEST_VENV)/bin/python -m pip install --quiet -e ".[dev]" -c constraints/oldest.txt
	touch $@

test-oldest: $(OLDEST_VENV)/.installed
	$(OLDEST_VENV)/bin/python -m pytest -q -m "not slow" -n $(TEST_WORKERS)

# What `test` leaves out: the slow tests, the compatibility suite among them (it skips, saying
# why, without compat-env).
test-slow: install
	$(PY) -m pytest -q -m slow

# The LiteLLM proxy at the one version tests/compat/requirements-litellm.txt pins. Refused if the
# install holds a .pth file of LiteLLM's (the shape of a reported compromise of its releases).
$(LITELLM_VENV)/.installed: tests/compat/requirements-litellm.txt
	python3 -m venv $(LITELLM_VENV)
	$(LITELLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LITELLM_VENV)/bin/python -m pip install --quiet -r tests/compat/requirements-litellm.txt
	! find $(LITELLM_VENV) -name 'litellm*.pth' | grep .
	touch $@

compat-env: $(LITELLM_VENV)/.installed

# Chromium for the slow test that opens the HTML test report in a real headless browser
# (tests/evals/test_html_browser.py, which skips, saying why, without it): Debian's package, when
# there is none yet; needs apt-get and root.
browser-env:
	command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium; }

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

ci: lint test test-oldest test-slow

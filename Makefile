VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install demo test lint ci

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

test: install
	$(PY) -m pytest -q -m "not slow"

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

ci: lint test

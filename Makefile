# One gate: `make check` runs lint, types and tests. It creates .venv with the
# dev extras on first use, so it works on a fresh clone (and is what .ci/run calls).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: check lint types test test-fast fmt bench crash-campaign reliability pg-campaign

check: $(VENV)/.installed lint types test

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

lint: $(VENV)/.installed
	$(PY) -m ruff check src tests bench examples
	$(PY) -m ruff format --check src tests bench examples

types: $(VENV)/.installed
	$(PY) -m mypy

test: $(VENV)/.installed
	$(PY) -m pytest -q

# The everyday run: everything but the tests marked slow (crash campaigns,
# several processes, servers in subprocesses). `make check` runs them all.
test-fast: $(VENV)/.installed
	$(PY) -m pytest -q -m "not slow"

fmt: $(VENV)/.installed
	$(PY) -m ruff format src tests bench examples
	$(PY) -m ruff check --fix src tests bench examples

bench: $(VENV)/.installed
	$(PY) bench/bench_foundation.py --json bench/results/foundation.json

reliability: $(VENV)/.installed
	$(PY) bench/reliability.py --json bench/results/reliability.json

crash-campaign: $(VENV)/.installed
	$(PY) bench/crash_campaign.py --rounds 1000 --json bench/results/crash_campaign.json

pg-campaign: $(VENV)/.installed
	$(PY) bench/pg_campaign.py --json bench/results/pg_campaign.json

# One gate: `make check` runs lint, types and tests (called by .ci/run).
PY ?= .venv/bin/python

.PHONY: check lint types test bench fmt

check: lint types test

lint:
	$(PY) -m ruff check src tests bench
	$(PY) -m ruff format --check src tests bench

types:
	$(PY) -m mypy

test:
	$(PY) -m pytest -q

fmt:
	$(PY) -m ruff format src tests bench
	$(PY) -m ruff check --fix src tests bench

bench:
	$(PY) bench/bench_foundation.py --json bench/results/foundation.json

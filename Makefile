# costsim: every target sets up .venv on first use (python3 -m venv + pip), so a fresh
# machine needs only `make app` or `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
SCENARIO ?= scenarios/baseline.yaml
PORT ?= 8501

.PHONY: app run bytecode lint test test-fast bench validate clean

# The Makefile is a prerequisite too: a change to what it installs (an extra) re-installs.
$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[app,test,dask,plan]'
	touch $(STAMP)

# The package's bytecode written ahead, as pip does for a package it installs but not for an
# editable one: a fresh process then imports costsim without compiling it (about 0.15 s of CPU),
# felt wherever processes start (the dashboard's first screen and workers, `costsim report`), and
# Python never writes it itself where PYTHONDONTWRITEBYTECODE is set. Up-to-date files are skipped.
bytecode: $(STAMP)
	$(PY) -m compileall -q costsim app.py

# `streamlit run app.py`, with the server's warm workers started first (costsim/dashboard/launch.py).
app: bytecode  ## open the dashboard on the baseline scenario
	$(PY) -m costsim.dashboard.launch app.py --server.port $(PORT) --browser.gatherUsageStats false

run: bytecode  ## CLI run of the baseline scenario, tables written to out/baseline
	$(VENV)/bin/costsim run $(SCENARIO) --out out/baseline

# Two workers (pytest-xdist), each test file on one of them: the suite's simulations are CPU-bound
# and a file's fixtures are shared by its tests; on this 2-core machine the suite takes about 10 minutes.
# The gates CI holds the code to: ruff (pyflakes, isort, bugbear, pyupgrade) and mypy on the package.
lint: bytecode  ## ruff and mypy, clean
	$(PY) -m ruff check costsim app.py tests benchmarks
	$(PY) -m mypy costsim

test: lint  ## the whole suite: unit, theory, property, CLI, dashboard (browser tests need chromium)
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=25

# The quick loop while editing: everything but the tests marked slow (full-year simulations,
# statistical validation, process pools, CLI subprocesses) and the browser tests (e2e).
test-fast: bytecode  ## the suite without slow and browser tests (make test, what CI runs, has them all)
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow and not e2e"

bench: bytecode  ## side-by-side performance ratios (see README)
	$(PY) benchmarks/trace_replay.py
	$(PY) benchmarks/rl_reference.py
	$(PY) benchmarks/million_trace.py
	$(PY) benchmarks/sweep_scaling.py
	$(PY) benchmarks/optimize_scaling.py
	$(PY) benchmarks/import_slurm.py
	$(PY) benchmarks/backfill_speed.py
	$(PY) benchmarks/serving_speed.py
	$(PY) benchmarks/dashboard_rerun.py
	$(PY) benchmarks/report_overhead.py
	$(PY) benchmarks/dashboard_timing.py

validate: $(STAMP)  ## regenerate docs/validation.md (published vs simulated)
	$(PY) -m costsim.calibration.validation

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis .mypy_cache .ruff_cache

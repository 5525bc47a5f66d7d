# The two commands of the README:
#   make demo   set everything up, run the platform on its embedded defaults (SQLite, this machine, local runner)
#   make test   set everything up and run the linters and the tests (CI's command, through .ci/run)
# And for developers:
#   make test-fast  the inner loop: no linters, no sandboxed evaluations, SQLite only (see the target)
#   make coverage   the whole suite under pytest-cov (slower than `make test`; the figure is in the README)
# Everything the project needs is installed from here; nothing relies on what a machine happens to have.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# PyTorch CPU build (lies on disk on our dev/CI machines; a plain `torch` would download a CUDA build of several GB).
TORCH_SPEC ?= torch==2.13.0
# The index pip takes PyTorch from (none by default: the CPU wheel above is found on disk here). Elsewhere pass
# PyTorch's CPU index, `make setup TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu`, or on a GPU machine the
# CUDA build's, e.g. `make setup TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 TORCH_SPEC=torch`.
TORCH_INDEX_URL ?=
TORCH_PIP_ARGS := $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
TRITON_SPEC ?= triton==3.7.1
STAMP := $(VENV)/.kernelcup-installed

.PHONY: setup system-deps demo test test-fast coverage lint schemas settings-doc openapi lock clean

setup: system-deps $(STAMP)

# bubblewrap sandboxes submissions on Linux; installed from Debian's packages where we can.
system-deps:
	@if [ "$$(uname -s)" = Linux ] && ! command -v bwrap >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing bubblewrap (submission sandbox)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) >/dev/null \
	      || echo "warning: could not install bubblewrap; runs will be reported as not sandboxed"; \
	  elif command -v apt-get >/dev/null 2>&1 && command -v sudo >/dev/null 2>&1; then \
	    sudo apt-get install -y -qq bubblewrap || echo "warning: could not install bubblewrap"; \
	  else \
	    echo "warning: bubblewrap (bwrap) not found; install it to sandbox submissions"; \
	  fi; \
	fi
	@# Chromium drives the web pages' browser tests (tests/web/test_browser.py), through Playwright.
	@if [ "$$(uname -s)" = Linux ] && ! command -v chromium >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing chromium (browser tests of the web pages)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null \
	      || echo "warning: could not install chromium; the browser tests will be skipped"; \
	  elif command -v apt-get >/dev/null 2>&1 && command -v sudo >/dev/null 2>&1; then \
	    sudo apt-get install -y -qq chromium || echo "warning: could not install chromium"; \
	  else \
	    echo "warning: chromium not found; the browser tests of the web pages will be skipped"; \
	  fi; \
	fi

$(STAMP): pyproject.toml Makefile
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kernelcup needs Python 3.11 or newer (PYTHON=$(PYTHON))")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c 'import torch' 2>/dev/null || $(BIN)/python -m pip install -q $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"
	$(BIN)/python -c 'import triton' 2>/dev/null || $(BIN)/python -m pip install -q "$(TRITON_SPEC)" \
	  || echo "warning: triton not installed; Triton submissions will not run on this machine"
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: setup
	$(BIN)/kernelcup demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

# The suite runs on pytest-xdist's workers: most tests wait on evaluation subprocesses (each imports PyTorch), so
# a worker per core keeps CI's two cores busy (serial it took 16 minutes there). `--dist loadgroup` keeps the tests
# of one `xdist_group` marker on one worker, in file order (the bad-submission and cheat modules, whose last test
# checks the runner after all their cases), and those of a module that share a module-scoped fixture, built once
# (tests/conftest.py). `--durations=25` prints the 25 slowest tests. PYTEST_WORKERS=0 runs it
# in one process; PYTEST_ARGS adds options (e.g. PYTEST_ARGS='-k ranking').
PYTEST_WORKERS ?= auto
PYTEST_ARGS ?=
PYTEST := $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

test: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(PYTEST) -q --durations=25 $(PYTEST_ARGS)

# The inner loop, not CI's command: no ruff or mypy, and only the tests that need neither the sandbox nor a service.
# It leaves out the tests marked slow (end-to-end evaluations in sandboxed processes), the sandbox's own tests
# (tests/runners/sandbox), the PostgreSQL half of the database tests (SQLite only) and the browser tests.
# Run `make test` before pushing: it is the full suite, and what CI runs.
test-fast: setup
	$(PYTEST) -q -m 'not slow and not postgres and not browser' --ignore=tests/runners/sandbox $(PYTEST_ARGS)

# Line coverage of the five packages by the whole suite, in the test processes (the sandboxed evaluation processes
# are not measured: coverage could not write its data from inside the sandbox). The figure is in the README.
COV_PACKAGES := kernelcup leaderboards runners bot web
# Its data and HTML report go to out/ (ignored by git).
coverage: setup
	mkdir -p out
	COVERAGE_FILE=out/.coverage $(PYTEST) -q $(addprefix --cov=,$(COV_PACKAGES)) --cov-report=term:skip-covered \
	  --cov-report=html:out/htmlcov $(PYTEST_ARGS)

# The JSON Schemas under docs/schemas/ are generated from the models; regenerate after changing Task or RunResult.
schemas: setup
	$(BIN)/kernelcup schema task > docs/schemas/task.schema.json
	$(BIN)/kernelcup schema result > docs/schemas/result.schema.json

# docs/settings.md from the settings models' own field descriptions (a test checks the committed page is in step).
settings-doc: setup
	$(BIN)/python -m kernelcup.settings_doc

# tests/web/openapi_snapshot.json from the app's OpenAPI document (a test fails with a diff until it is regenerated).
openapi: setup
	$(BIN)/python scripts/openapi_snapshot.py

# The service's hash-pinned lock (the Docker image installs it); regenerate after changing pyproject.toml's dependencies.
UV ?= uv
LOCK_HEADER_LINES := 7
lock:
	$(UV) pip compile pyproject.toml --extra modal --generate-hashes --python-version 3.12 \
	  --python-platform x86_64-unknown-linux-gnu --no-header -o requirements.lock.body
	head -n $(LOCK_HEADER_LINES) requirements.lock | cat - requirements.lock.body > requirements.lock.new
	mv requirements.lock.new requirements.lock && rm requirements.lock.body

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache out/.coverage out/htmlcov

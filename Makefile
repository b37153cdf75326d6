# The two set-up commands of the README: `make demo` and `make test`. Each creates or updates the
# local virtual environment first, so both work on a fresh machine that has only python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-unit test-integration lint bench clean venv install-system compat-docs

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { \
		echo "python3 -m venv failed: on Debian, install it with: apt-get install python3-venv"; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,lint]'
	@touch $@

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python scripts/demo.py

# The tests run in WORKERS processes (pytest-xdist); those that share something machine-wide
# carry an xdist_group mark and run in one worker, one after another. Most wait on daemons, so
# more workers than cores pay. `make test WORKERS=0` runs them in this process alone.
WORKERS ?= 3
PYTEST := $(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup

test: $(STAMP)
	$(PYTEST) tests

test-unit: $(STAMP)
	$(PYTEST) tests/unit

test-integration: $(STAMP)
	$(PYTEST) tests/integration

lint: $(STAMP)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports

# For every user of a shared machine (as root): a root-owned environment under PREFIX made with
# the system's python3, its `drover` linked into BINDIR. Then `drover up --system`.
PREFIX ?= /opt/drover
BINDIR ?= /usr/local/bin
UNITDIR ?=
install-system:
	PREFIX='$(PREFIX)' BINDIR='$(BINDIR)' UNITDIR='$(UNITDIR)' scripts/install-system.sh

# docs/compat.md's option tables, from the front ends' option definitions.
compat-docs: $(STAMP)
	$(BIN)/python scripts/compat_docs.py

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build src/*.egg-info

# The two set-up commands of the README: `make demo` and `make test`. Each creates or updates the
# local virtual environment first, so both work on a fresh machine that has only python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps in one environment: the demo needs Drover and its runtime dependencies alone;
# the tests, lint and `make dist` add their tools (a later `make test` after `make demo` adds them).
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: demo test test-unit test-integration lint bench clean venv install-system compat-docs dist deb cli-files

define make-venv
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { \
		echo "python3 -m venv failed: on Debian, install it with: apt-get install python3-venv"; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip
endef

# constraints.txt holds the versions the tests last passed with: a dependency's new release does
# not change the checks under a commit that passed them.
$(STAMP): pyproject.toml constraints.txt
	$(make-venv)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,lint,dist]'
	@touch $@ $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml constraints.txt
	$(make-venv)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	@touch $@

venv: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/python scripts/demo.py

# A wheel and an sdist in dist/, by python -m build: it builds the sdist first and the wheel from
# it, so a file the sdist forgets fails here, not on a user's machine. The man pages and
# completion scripts in them are the checked-in ones (`make cli-files` regenerates them).
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	@ls -l dist

# A Debian package in dist/ (a virtual environment under /opt/venvs/drover, /usr/bin/drover, the
# man pages, completion and systemd units): scripts/build-deb.sh says what it holds and why.
deb:
	scripts/build-deb.sh dist

# The man pages and the shell completion scripts, from the commands' parsers.
cli-files: $(STAMP)
	$(BIN)/python scripts/cli_files.py

# The tests run in WORKERS processes (pytest-xdist); those that share something machine-wide
# carry an xdist_group mark and run in one worker, one after another. Most wait on daemons, so
# more workers than cores pay. `make test WORKERS=0` runs them in this process alone.
WORKERS ?= 3
PYTEST := $(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup

# The workflow tools' tests (parsl, snakemake, ...) run last and alone: their own worker pools
# and time-outs are the first to suffer when the other workers load the machine.
SERIAL := tests/integration/workflows

test: $(STAMP)
	$(PYTEST) tests --ignore=$(SERIAL)
	$(BIN)/python -m pytest -n 0 $(SERIAL)

test-unit: $(STAMP)
	$(PYTEST) tests/unit

test-integration: $(STAMP)
	$(PYTEST) tests/integration --ignore=$(SERIAL)
	$(BIN)/python -m pytest -n 0 $(SERIAL)

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
	rm -rf $(VENV) build dist src/*.egg-info

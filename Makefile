# Two commands do all the set-up on a fresh machine with only Python:
#   make demo   builds .venv, installs the kit and runs `sdpa-course demo`
#   make test   builds .venv, installs the kit with its test extra (and, as root, the Debian
#               packages the browser and PostgreSQL tests drive) and runs ruff and the quick
#               tests (all but those marked `slow`)
# The slow tests (browsers, fresh virtualenvs, PostgreSQL, Dask, the sandbox run three ways,
# the whole corpus on more variants) run with `make test-slow`; `make test-all` runs both, as
# .ci/run does. Each is a pytest session of its own, with its own leftover checks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
KIT := $(VENV)/.kit-installed
TEST_KIT := $(VENV)/.test-installed
# nbgrader shells out to `alembic`: the venv's bin must be on PATH.
RUN := PATH="$(CURDIR)/$(BIN):$$PATH"

.PHONY: demo test test-slow test-all notebooks clean

$(KIT): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(KIT)

$(TEST_KIT): $(KIT)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(TEST_KIT)

demo: $(KIT)
	$(RUN) $(BIN)/sdpa-course demo

test: $(TEST_KIT)
	sh tests/install_system_packages.sh
	$(BIN)/ruff check --no-cache .
	$(RUN) $(BIN)/python -m pytest -p no:cacheprovider -m "not slow"

test-slow: $(TEST_KIT)
	sh tests/install_system_packages.sh
	$(RUN) $(BIN)/python -m pytest -p no:cacheprovider -m slow

test-all: test test-slow

# Rebuild the generated notebooks (source .ipynb and the answer key) and autograder/lesson_cells.py
# (the cells grading leaves out) from their text sources.
notebooks: $(KIT)
	$(RUN) $(BIN)/sdpa-course build

clean:
	rm -rf $(VENV) release submitted autograded feedback reports gradebook.db

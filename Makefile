# Two commands do all the set-up on a fresh machine with only Python:
#   make demo   builds .venv, installs the kit and runs `sdpa-course demo`
#   make test   builds .venv, installs the kit with its test extra and runs the tests
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint notebooks clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,e2e]'
	touch $(STAMP)

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/sdpa-course demo

test: $(STAMP)
	sh tests/e2e/install_chromium.sh
	sh tests/install_postgresql.sh
	$(BIN)/ruff check .
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest

# Rebuild the generated notebooks (source .ipynb and the answer key) from their text sources.
notebooks: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/sdpa-course build

clean:
	rm -rf $(VENV) release submitted autograded feedback reports gradebook.db

# The README's two commands: `make run` and `make test`. Both set up .venv on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CPU build of torch; an unpinned torch pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0
SPEC ?= specs/cartpole.yaml

.PHONY: run test lint setup

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_PIN)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

run: setup
	$(BIN)/ppo-platform run $(SPEC)

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

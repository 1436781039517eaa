# The README's two commands: `make run` and `make test`. Both set up .venv on a fresh machine.
# `make lint`: ruff (lint + format), mypy, and the import contract (lint-imports); CI runs it.
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

# mypy's files and the import contract are declared in pyproject.toml. The source roots go
# first on the path so lint-imports analyses this tree, whatever .venv has installed.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	PYTHONPATH=platform:. $(BIN)/lint-imports

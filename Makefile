# The README's two commands: `make run` and `make test`. Both set up .venv on a fresh machine.
# `make lint`: ruff (lint + format), mypy, and the import contract (lint-imports); CI runs it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CPU build of torch; an unpinned torch pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0
SPEC ?= specs/cartpole.yaml
# Extras installed into .venv; `ray` brings the Ray executor and its cluster tests, `docs` the
# MkDocs site the tests build (`mkdocs build --strict`), `atari` and `mujoco` the ALE games and
# MuJoCo envs that tests/ppo_platform_tests/envs trains, `video` and `export` the trained agent's
# video recording and ONNX export (their tests need them), `lm` the language-model trainer
# (transformers, tokenizers) and its tests.
EXTRAS ?= dev,ray,docs,atari,mujoco,video,export,lm,envpool

.PHONY: run test lint setup docs bench bench-zoo-venv bench-full

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile  # a new extra in EXTRAS reinstalls too
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_PIN)"
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

run: setup
	$(BIN)/ppo-platform run $(SPEC)

test: setup
	$(BIN)/python -m pytest

# The documentation site (mkdocs.yml) into site/; `.venv/bin/mkdocs serve` to read it while editing.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# mypy's files and the import contract are declared in pyproject.toml. The source roots go
# first on the path so lint-imports analyses this tree, whatever .venv has installed.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	PYTHONPATH=platform:. $(BIN)/lint-imports

# Whole-process benchmark, quick set (256 + 20k env steps, 3 rounds; < 15 min on 2 cores), into
# benchmarks/results/whole_process_quick.*, a local check that is not committed (.gitignore):
# whole_process.* holds the current full 5-round result.
# rl-baselines3-zoo lives only in its own venv, never in the project's dependencies.
ZOO_VENV ?= benchmarks/.venv-zoo
bench: setup
	-$(MAKE) bench-zoo-venv
	$(BIN)/python benchmarks/whole_process.py --steps 256 20000 --pairs 3 --out whole_process_quick

# Sample efficiency: planner vs rl-baselines3-zoo hyperparameters, 6 envs x 3 seeds (hours on 2
# loaded cores). LunarLander needs the box2d extra; without it that env is skipped and says so.
bench-full: setup
	-$(BIN)/python -m pip install --quiet -e ".[box2d]"
	PYTHONPATH=platform:. $(BIN)/python benchmarks/sample_efficiency.py

bench-zoo-venv: $(ZOO_VENV)/.installed

$(ZOO_VENV)/.installed:
	test -x $(ZOO_VENV)/bin/python || $(PYTHON) -m venv $(ZOO_VENV)
	timeout 900 $(ZOO_VENV)/bin/python -m pip install --quiet "$(TORCH_PIN)" rl_zoo3
	touch $@

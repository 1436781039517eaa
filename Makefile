# The README's two commands: `make run` and `make test`. Both set up .venv on a fresh machine.
# `make lint`: ruff (lint + format), mypy, and the import contract (lint-imports); CI runs it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CPU build of torch; an unpinned torch pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0
# The stable-baselines3 release the fast paths' equality tests cover (trainers/fast/switch.py):
# outside it the fast paths switch off, so CI installs exactly this one.
SB3_PIN ?= stable-baselines3==2.9.2
SPEC ?= specs/cartpole.yaml
# Extras installed into .venv; `ray` brings the Ray executor and its cluster tests, `docs` the
# MkDocs site the tests build (`mkdocs build --strict`), `atari` and `mujoco` the ALE games and
# MuJoCo envs that tests/ppo_platform_tests/envs trains, `video` and `export` the trained agent's
# video recording and ONNX export (their tests need them), `lm` the language-model trainer
# (transformers, tokenizers) and its tests, `compiled` the JAX program of trainers/compiled.
EXTRAS ?= dev,ray,docs,atari,mujoco,video,export,lm,envpool,tensorboard,compiled

.PHONY: run test test-quick lint setup docs bench bench-zoo-venv bench-cleanrl-venv bench-cleanrl bench-full \
	bench-trl-venv bench-trl

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile  # a new extra in EXTRAS reinstalls too
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_PIN)" "$(SB3_PIN)"
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

run: setup
	$(BIN)/ppo-platform run $(SPEC)

test: setup
	$(BIN)/python -m pytest

# The quick tier: unit tests only (tests/tiers.py), <= 3 minutes on 2 cores, to run while changing
# code; `make test` runs every tier and is what CI calls.
test-quick: setup
	$(BIN)/python -m pytest -m "not slow and not integration"

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
	$(BIN)/python -m benchmarks.overhead.whole_process --steps 256 20000 --pairs 3 --out whole_process_quick
	-$(MAKE) bench-cleanrl

# ppo-platform vs CleanRL's single-file PPO scripts, whole processes, alternating pairs, into
# benchmarks/results/cleanrl_ab.* (the full set: `$(BIN)/python -m benchmarks.throughput.cleanrl_ab`).
# `make bench` runs the quick set: CartPole and the throughput configuration, both at 100k env
# steps, 3 pairs (a local check, not committed).
bench-cleanrl: setup bench-cleanrl-venv
	$(BIN)/python -m benchmarks.throughput.cleanrl_ab --rows cartpole throughput --pairs 3 --steps 100000 \
		--out cleanrl_ab_quick

# Sample efficiency: planner vs rl-baselines3-zoo hyperparameters, 6 envs x 3 seeds (hours on 2
# loaded cores). LunarLander needs the box2d extra; without it that env is skipped and says so.
bench-full: setup
	-$(BIN)/python -m pip install --quiet -e ".[box2d]"
	PYTHONPATH=platform:. $(BIN)/python -m benchmarks.learning.sample_efficiency

bench-zoo-venv: $(ZOO_VENV)/.installed

# CleanRL lives only in its own venv with its scripts copied (not committed) into
# benchmarks/.cleanrl/ from CLEANRL_REPO at CLEANRL_REF: a clone, a bare git dir or a URL
# (cloned bare into benchmarks/.cleanrl/repo.git); benchmarks/throughput/cleanrl_ab.py patches the scripts
# for gymnasium 1.x as it copies them.
CLEANRL_VENV ?= benchmarks/.venv-cleanrl
CLEANRL_REPO ?= https://github.com/vwxyzjn/cleanrl
CLEANRL_REF ?= fe8d8a03
bench-cleanrl-venv: $(CLEANRL_VENV)/.installed
	$(PYTHON) -m benchmarks.throughput.cleanrl_ab --copy-scripts "$(CLEANRL_REPO)" --ref $(CLEANRL_REF)

$(CLEANRL_VENV)/.installed:
	test -x $(CLEANRL_VENV)/bin/python || $(PYTHON) -m venv $(CLEANRL_VENV)
	timeout 900 $(CLEANRL_VENV)/bin/python -m pip install --quiet "$(TORCH_PIN)" \
		"gymnasium[mujoco]>=1.1,<2" tyro tensorboard numpy ale-py opencv-python-headless
	touch $@

$(ZOO_VENV)/.installed:
	test -x $(ZOO_VENV)/bin/python || $(PYTHON) -m venv $(ZOO_VENV)
	timeout 900 $(ZOO_VENV)/bin/python -m pip install --quiet "$(TORCH_PIN)" rl_zoo3
	touch $@

# TRL's PPOTrainer side by side with `ppo_lm` on the LM demo, TRL only in its own venv (never a
# project dependency): trl 1.12.0 is the last release with trl/experimental/ppo.
TRL_VENV ?= benchmarks/.venv-trl
bench-trl-venv: $(TRL_VENV)/.installed

$(TRL_VENV)/.installed:
	test -x $(TRL_VENV)/bin/python || $(PYTHON) -m venv $(TRL_VENV)
	timeout 900 $(TRL_VENV)/bin/python -m pip install --quiet "$(TORCH_PIN)" \
		transformers==5.24.0 trl==1.12.0
	touch $@

# Into benchmarks/results/trl_side_by_side.{json,md} (~25 min on 2 loaded cores).
bench-trl: setup bench-trl-venv
	HF_HUB_OFFLINE=1 nice -n 10 $(BIN)/python -m benchmarks.learning.trl_side_by_side --updates 200

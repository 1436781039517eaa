"""Class 4: specs that would exhaust the machine are refused at validation, in under a second,
with the estimate and the budget; workers are capped at the work; grids are sized before they
are built."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_cli import assert_bad_input, cli

from ppo_platform.errors import SpecError
from ppo_platform.execution.local import default_workers, worker_count
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.spec.resources import estimate, human
from ppo_platform.tuning.space import check_space

CARTPOLE = "name: t\nenv: {id: CartPole-v1, n_envs: 1}\nrollout: {n_steps: 64}\n"

OVERSIZED = {
    "gridworld-10^10-cells": (
        "name: t\nenv: {id: ppo_platform/GridWorld-v0, kwargs: {size: 100000}}\n",
        "of memory",
    ),
    "every-limit-at-max": (
        "name: t\nenv: {id: CartPole-v1, n_envs: 256}\nrollout: {n_steps: 1000000}\n"
        "budget: {total_timesteps: 10000000000}\n"
        "evaluation: {every_timesteps: 256000000}\ncheckpoints: {every_timesteps: 256000000}\n",
        "rollout buffer",
    ),
    "wide-network-many-envs": (
        "name: t\nenv: {id: CartPole-v1, n_envs: 256}\nrollout: {n_steps: 400000}\n"
        "budget: {total_timesteps: 102400000}\n"
        "policy: {net_arch: [4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096]}\n",
        "of memory",
    ),
    "checkpoint-every-step": (
        CARTPOLE + "checkpoints: {every_timesteps: 1}\n",
        "times per rollout",
    ),
    "keep-a-billion-checkpoints": (
        CARTPOLE + "budget: {total_timesteps: 10000000000}\n"
        "policy: {net_arch: [1024, 1024]}\n"
        "checkpoints: {every_timesteps: 64, keep_last: 1000000000}\n",
        "of disk",
    ),
    "evaluate-every-step": (
        CARTPOLE + "evaluation: {every_timesteps: 1, episodes: 10000}\n",
        "times per rollout",
    ),
    "ten-thousand-episodes-per-eval": (
        CARTPOLE + "evaluation: {every_timesteps: 64, episodes: 10000}\n",
        "evaluation.episodes",
    ),
}


@pytest.fixture
def laptop_budget(platform_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget of a 16 GB laptop with 100 GB free, whatever machine runs the tests."""
    monkeypatch.setenv("PPO_PLATFORM_MEMORY_BUDGET_BYTES", str(8 * 2**30))
    monkeypatch.setenv("PPO_PLATFORM_DISK_BUDGET_BYTES", str(50 * 2**30))
    get_settings.cache_clear()


@pytest.mark.parametrize("name", sorted(OVERSIZED))
def test_oversized_specs_are_refused_before_anything_is_built(
    laptop_budget: None, tmp_path: Path, name: str
) -> None:
    text, fragment = OVERSIZED[name]
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    result = cli("validate", str(path))
    assert_bad_input(result, "refused", fragment)
    if "memory" in fragment or "disk" in fragment:
        assert "over the budget of" in result.output


def test_the_budget_is_configurable(
    platform_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(CARTPOLE)
    assert cli("validate", str(path)).exit_code == 0
    monkeypatch.setenv("PPO_PLATFORM_MEMORY_BUDGET_BYTES", str(100 * 2**20))
    get_settings.cache_clear()
    assert_bad_input(cli("validate", str(path)), "over the budget of 100.0 MiB")
    monkeypatch.setenv("PPO_PLATFORM_DISK_BUDGET_BYTES", "1000")
    monkeypatch.setenv("PPO_PLATFORM_MEMORY_BUDGET_BYTES", str(2**40))
    get_settings.cache_clear()
    assert_bad_input(cli("validate", str(path)), "of disk, over the budget of 1000 B")


def test_the_estimate_grows_with_the_rollout_and_stays_small_for_classic_control() -> None:
    small = load_spec_text(CARTPOLE)
    assert estimate(small, 4).memory < 600 * 2**20
    big = load_spec_text(
        CARTPOLE.replace("n_steps: 64", "n_steps: 640000") + "budget: {total_timesteps: 640000}\n"
    )
    assert (
        estimate(big, 4).parts["rollout buffer"]
        == 10_000 * estimate(small, 4).parts["rollout buffer"]
    )
    assert human(3 * 2**30) == "3.0 GiB"


def test_a_ten_thousand_point_sweep_is_refused_before_it_is_built(tmp_path: Path) -> None:
    values = ", ".join(str(i) for i in range(1, 101))
    sweep = f"sweep:\n  grid: {{update.epochs: [{values}], policy.net_arch: [{values}]}}\n"
    path = tmp_path / "sweep.yaml"
    path.write_text(CARTPOLE + sweep.replace("policy.net_arch", "update.minibatch_size"))
    result = cli("sweep", str(path))
    assert_bad_input(result, "expands to 10000 runs", "1000")


@pytest.mark.parametrize("high", [2_000_000_000, 2**62])
def test_a_grid_sampler_over_a_huge_int_range_is_counted_not_built(high: int) -> None:
    spec = load_spec_text(
        CARTPOLE + "tune:\n  sampler: {type: grid}\n"
        f"  space: {{update.minibatch_size: {{type: int, low: 1, high: {high}}}}}\n"
    )
    with pytest.raises(SpecError, match="the grid has"):  # counted: building 2**62 would hang
        check_space(spec, from_outside=False)


def test_workers_are_capped_at_the_work_and_warned_above_the_cores() -> None:
    assert worker_count(1000, 3)[0] == 3
    assert worker_count(6, 1) == (1, None)  # tune --workers 6 for one trial: one worker
    assert worker_count(None, 10_000)[0] == default_workers()
    count, warning = worker_count(default_workers() + 1, 100)
    assert count == default_workers() + 1
    assert warning is not None and "core" in warning

"""`ppo-platform doctor PATH` on TensorBoard logs of other PPO code: stable-baselines3's, written
in-process by SB3 itself; CleanRL's, written by real CleanRL runs in a throwaway venv
(tests/fixtures/cleanrl_tb: CleanRL is never a dependency), and its tag vocabulary written with
torch's SummaryWriter for planted faults."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from series_factory import curve, flat_return, healthy
from typer.testing import CliRunner

from ppo_platform.cli import app

# CleanRL's names for what our runs call train/*, rollout/* (losses/entropy is + entropy).
CLEANRL_NAMES = {
    "train/approx_kl_post": ("losses/approx_kl", 1.0),
    "train/clip_fraction": ("losses/clipfrac", 1.0),
    "train/explained_variance": ("losses/explained_variance", 1.0),
    "train/entropy_loss": ("losses/entropy", -1.0),
    "train/value_loss": ("losses/value_loss", 1.0),
    "train/learning_rate": ("charts/learning_rate", 1.0),
    "rollout/ep_rew_mean": ("charts/episodic_return", 1.0),
    "rollout/ep_len_mean": ("charts/episodic_length", 1.0),
}


def write_cleanrl_log(folder: Path, series: dict[str, list[tuple[int, float]]]) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(folder / "CartPole-v1__ppo__1__1700000000"))
    for ours, (name, sign) in CLEANRL_NAMES.items():
        for step, value in series[ours]:
            writer.add_scalar(name, sign * value, step)
    writer.add_scalar("charts/SPS", 1000.0, 2048)
    writer.close()
    return folder


def doctor(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["doctor", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def sb3_log(folder: Path, **ppo: Any) -> Path:
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", "CartPole-v1", n_steps=256, seed=0, tensorboard_log=str(folder), **ppo)
    model.learn(4096)
    return folder


@pytest.mark.slow
def test_sb3_log_with_a_step_far_too_large(tmp_path: Path) -> None:
    folder = sb3_log(tmp_path / "sb3", learning_rate=0.03, n_epochs=30, batch_size=64)
    diagnosis = doctor(folder)
    top = diagnosis["causes"][0]
    assert top["cause"] == "step_too_large" and top["evidence"][0]["metric"] == "train/approx_kl"
    assert top["patch"] == {}  # no spec in the folder: the advice says by how much
    not_judged = {item["cause"] for item in diagnosis["not_judged"]}
    assert {"observations_not_finite", "horizon_too_short", "env_crash"} <= not_judged


@pytest.mark.slow
def test_sb3_log_of_a_default_run_has_no_cause(tmp_path: Path) -> None:
    assert doctor(sb3_log(tmp_path / "sb3"))["causes"] == []


def test_cleanrl_log_of_a_healthy_run_has_no_cause(tmp_path: Path) -> None:
    assert doctor(write_cleanrl_log(tmp_path / "runs", healthy()))["causes"] == []


def test_cleanrl_log_with_an_entropy_collapse(tmp_path: Path) -> None:
    series = healthy()
    curve(lambda i: -0.69 if i < 4 else -0.01, "train/entropy_loss", series)
    flat_return(series)
    top = doctor(write_cleanrl_log(tmp_path / "runs", series))["causes"][0]
    assert top["cause"] == "entropy_collapse" and top["evidence"][0]["metric"] == "losses/entropy"


def test_a_folder_without_event_files_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["doctor", str(tmp_path)])
    assert result.exit_code == 2 and "is not a folder of TensorBoard event files" in result.output


def test_without_the_extra_the_error_names_it(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['tensorboard'] = None\n"  # as if the extra were not installed
        "from ppo_platform.cli.app import main\n"
        f"sys.argv = ['ppo-platform', 'doctor', {str(tmp_path)!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert 'pip install "ppo-platform[tensorboard]"' in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# Real CleanRL runs (tests/fixtures/cleanrl_tb/README.md: the command and CleanRL's commit).
CLEANRL_RUNS = Path(__file__).parents[2] / "fixtures" / "cleanrl_tb"


def test_a_real_cleanrl_log_of_its_defaults_has_no_cause() -> None:
    diagnosis = doctor(CLEANRL_RUNS / "CartPole-v1__ppo__1__1796430315")
    assert diagnosis["causes"] == []
    not_judged = {item["cause"]: item["reason"] for item in diagnosis["not_judged"]}
    # 8 updates, 5 from half the run on: too few to judge the critic
    assert not_judged["critic_not_learning"].startswith("5 updates in the run's late half")


def test_a_real_cleanrl_log_with_a_step_far_too_large() -> None:
    diagnosis = doctor(CLEANRL_RUNS / "CartPole-v1__ppo_lr200x_k30_t32__1__1796430506")
    top = diagnosis["causes"][0]
    assert top["cause"] == "step_too_large" and top["evidence"][0]["metric"] == "losses/approx_kl"
    assert top["first_step"] == 512  # the second update (4 envs x 32 steps each)
    assert "divide the learning rate" in top["advice"] and top["patch"] == {}

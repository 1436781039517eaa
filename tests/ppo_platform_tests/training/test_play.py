"""A run's trained agent played again (`enjoy`), filmed (`--video`, `evaluation.video`) and
loaded in plain SB3: the env rebuilt from the stored spec, statistics from the run's folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import imageio.v2 as imageio
import numpy as np
import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from ppo_platform.cli import EXIT_BAD_INPUT, app
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import validate_data
from ppo_platform.training.play import load_policy, play, trained_run, video_name
from ppo_platform.training.runner import run_spec
from tests.plain_sb3 import plain_sb3_actions

pytestmark = pytest.mark.slow  # one real training run behind the module
runner = CliRunner()
SPEC: dict[str, Any] = {
    "name": "filmed",
    "env": {"id": "CartPole-v1", "n_envs": 2, "normalize": {"obs": True}},
    "rollout": {"n_steps": 64},
    "update": {"epochs": 2, "minibatch_size": 64},
    "policy": {"net_arch": [16]},
    "budget": {"total_timesteps": 512},
    "evaluation": {"every_timesteps": 0, "episodes": 2, "video": 2},
}


@pytest.fixture(scope="module")
def run_id(shared_home: Path) -> str:
    result = run_spec(validate_data(SPEC))
    assert result.outcome == "completed"
    return result.run_id


def frames_of(path: Path) -> list[np.ndarray]:
    frames = []
    with imageio.get_reader(path) as reader:  # its length is unknown: no list(reader)
        for frame in reader:
            frames.append(frame)
    return frames


def test_evaluation_videos_are_run_artifacts(run_id: str) -> None:
    videos = get_settings().runs_dir / run_id / "videos"
    names = [video_name(1), video_name(2)]
    assert sorted(p.name for p in videos.iterdir()) == names
    frames = frames_of(videos / names[0])
    assert frames[0].shape == (400, 600, 3) and len(frames) > 8
    assert frames[0].std() > 0  # a drawn cart, not a blank frame
    logged = MlflowClient(get_settings().tracking_uri).list_artifacts(run_id, "videos")
    assert sorted(Path(a.path).name for a in logged) == names


def test_enjoy_plays_the_episodes_and_prints_their_returns(run_id: str) -> None:
    result = runner.invoke(app, ["enjoy", run_id, "--episodes", "2"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"run {run_id}: CartPole-v1, final model"
    returns = [float(line.split("return ")[1].split()[0]) for line in lines[1:3]]
    assert lines[3] == f"mean return {np.mean(returns):.2f} over 2 episode(s)"
    # CartPole pays 1 per step: the return is the episode's length.
    assert all(
        line.endswith(f"({int(r)} steps)") for line, r in zip(lines[1:3], returns, strict=True)
    )


def test_a_run_trained_on_cuda_plays_where_torch_sees_no_gpu(run_id: str) -> None:
    """A run's stored spec as a GPU machine writes it (`policy.device: cuda`), played where
    torch sees none: before, `enjoy` and `export` (both through `trained_run`) refused the
    stored spec. Read as `auto`, this MLP plays on the CPU."""
    stored = get_settings().runs_dir / run_id / "spec.yaml"
    text = stored.read_text()
    assert "device: auto" in text
    stored.write_text(text.replace("device: auto", "device: cuda"))
    try:
        run = trained_run(get_settings(), run_id)
        model, env = load_policy(run)
        result = runner.invoke(app, ["enjoy", run_id, "--episodes", "1"])
    finally:
        stored.write_text(text)
    env.close()
    assert run.spec.policy.device == "auto"
    assert model.device.type == "cpu"
    assert result.exit_code == 0, result.output


def test_enjoy_video_records_every_step_of_the_episodes(run_id: str, tmp_path: Path) -> None:
    out = tmp_path / "agent.mp4"
    result = runner.invoke(app, ["enjoy", run_id, "--episodes", "1", "--video", str(out)])
    assert result.exit_code == 0, result.output
    steps = int(result.stdout.splitlines()[1].split("(")[1].split()[0])
    assert len(frames_of(out)) == steps + 1  # the reset frame, then one per step
    # The first evaluation video films the same seeded episode of the same policy.
    filmed = get_settings().runs_dir / run_id / "videos" / video_name(1)
    assert len(frames_of(filmed)) == steps + 1


def test_enjoy_refuses_bad_outputs_and_unknown_runs(run_id: str, tmp_path: Path) -> None:
    (tmp_path / "taken.mp4").write_bytes(b"x")
    for args, message in (
        (["--video", str(tmp_path / "agent.avi")], "must be a .mp4 file"),
        (["--video", str(tmp_path / "taken.mp4")], "exists already"),
        (["--video", str(tmp_path / "missing" / "a.mp4")], "folder does not exist"),
    ):
        result = runner.invoke(app, ["enjoy", run_id, *args])
        assert result.exit_code == EXIT_BAD_INPUT and message in result.stderr, result.output
    assert (tmp_path / "taken.mp4").read_bytes() == b"x"
    unknown = runner.invoke(app, ["enjoy", "0" * 32])
    assert unknown.exit_code == EXIT_BAD_INPUT and "no run folder" in unknown.stderr


def test_statistics_are_loaded_only_from_the_runs_own_folder(run_id: str, tmp_path: Path) -> None:
    stats = get_settings().runs_dir / run_id / "final" / "vecnormalize.pkl"
    moved = tmp_path / "vecnormalize.pkl"
    os.replace(stats, moved)
    try:
        os.symlink(moved, stats)
        result = runner.invoke(app, ["enjoy", run_id, "--episodes", "1"])
        assert result.exit_code == EXIT_BAD_INPUT
        assert "link out of its folder" in result.stderr
    finally:
        stats.unlink()
        os.replace(moved, stats)


def test_the_run_model_loads_in_plain_sb3_and_acts_as_the_platform(
    run_id: str, tmp_path: Path
) -> None:
    run = trained_run(get_settings(), run_id)
    model, env = load_policy(run)
    observations = np.random.default_rng(1).normal(0, 0.5, (64, 4)).astype(np.float32)
    expected, _ = model.predict(env.normalize_obs(observations), deterministic=True)  # type: ignore[attr-defined]
    assert play(model, env, 1)[0].length > 0
    actions, seen = plain_sb3_actions(
        run.model, observations, normalize=run.normalize, workdir=tmp_path
    )
    assert seen["project_modules"] == [] and seen["class"].startswith("stable_baselines3.")
    np.testing.assert_array_equal(actions, expected)

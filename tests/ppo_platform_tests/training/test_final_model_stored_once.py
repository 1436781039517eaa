"""The final model is stored once: the last checkpoint, final/model.zip and the MLflow artifact
are one file on disk (hard links), not three copies."""

from __future__ import annotations

from pathlib import Path

from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.tracking.local_artifacts import local_folder
from ppo_platform.training import checkpoints as ckpt
from ppo_platform.training.resume import run_folder
from ppo_platform.training.runner import run_spec

SPEC = """name: stored-once
env: {id: CartPole-v1, n_envs: 2, normalize: {obs: true}}
rollout: {n_steps: 32}
update: {epochs: 1, minibatch_size: 32}
policy: {net_arch: [8]}
budget: {total_timesteps: 128}
evaluation: {every_timesteps: 0, episodes: 1}
checkpoints: {every_timesteps: 64}
"""


def test_the_final_checkpoint_model_and_artifact_are_one_file(platform_home: Path) -> None:
    from mlflow.tracking import MlflowClient

    result = run_spec(load_spec_text(SPEC, "spec"))
    settings = get_settings()
    folder = run_folder(settings, result.run_id)
    checkpoint = ckpt.model_path(folder / "checkpoints", result.timesteps)
    uri = MlflowClient(settings.tracking_uri).get_run(result.run_id).info.artifact_uri
    artifacts = local_folder(uri)
    assert artifacts is not None
    for name in ("model.zip", "vecnormalize.pkl"):
        final, logged = folder / "final" / name, artifacts / "model" / name
        original = (
            checkpoint
            if name == "model.zip"
            else ckpt.normalize_path(folder / "checkpoints", result.timesteps)
        )
        assert final.stat().st_ino == original.stat().st_ino == logged.stat().st_ino
        assert final.stat().st_nlink == 3

"""From Python: `run_spec(spec, make_env=...)` trains a notebook user's own env, ships it to subproc
envs and the async evaluation process, and refuses one that cannot be shipped; and any image env
trains with in-process evaluation (the VecTransposeImage crash)."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import gymnasium
import pytest
from env_package_fixtures import LOCAL_MODULE, LOCAL_PIXELS_ENV

from ppo_platform.errors import BadInputError
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.training.runner import run_spec

SPEC = """name: notebook
env: {{id: {env}, n_envs: 2, vectorization: {vectorization}}}
rollout: {{n_steps: 32}}
update: {{epochs: 2, minibatch_size: 32}}
policy: {{net_arch: {net_arch}}}
budget: {{total_timesteps: 128}}
evaluation: {{every_timesteps: 64, episodes: 2, async: {run_async}}}
checkpoints: {{every_timesteps: 0}}
"""


def _spec(env: str, vectorization: str = "dummy", run_async: bool = False, net_arch: str = "[]"):  # type: ignore[no-untyped-def]
    text = SPEC.format(
        env=env, vectorization=vectorization, run_async=str(run_async).lower(), net_arch=net_arch
    )
    return load_spec_text(text, "notebook")


@pytest.mark.slow
def test_a_factory_trains_with_subproc_envs_and_async_evaluation(shared_home: Path) -> None:
    def make_short_cartpole() -> gymnasium.Env:  # type: ignore[type-arg]
        """Defined where it is used, as in a notebook: shipped by value, not by import."""
        return gymnasium.make("CartPole-v1", max_episode_steps=20)

    spec = _spec("MyNotebookEnv-v0", "subproc", run_async=True, net_arch="[16]")
    result = run_spec(spec, make_env=make_short_cartpole)
    assert result.status == "FINISHED"
    assert result.final_eval_mean is not None and 1.0 <= result.final_eval_mean <= 20.0


def test_a_factory_that_cannot_be_pickled_is_refused_before_the_run(shared_home: Path) -> None:
    lock = threading.Lock()  # a live lock cannot travel to another process

    def holds_a_lock() -> gymnasium.Env:  # type: ignore[type-arg]
        with lock:
            return gymnasium.make("CartPole-v1")

    spec = _spec("MyNotebookEnv-v0", run_async=True, net_arch="[16]")
    with pytest.raises(BadInputError) as caught:
        run_spec(spec, make_env=holds_a_lock)
    issue = caught.value.issues[0]
    assert issue.path == "evaluation.async"
    assert "cannot be pickled" in issue.message
    assert "evaluation.async: false" in (issue.fix or "")


@pytest.mark.usefixtures("own_envs_importable")
def test_an_image_env_trains_with_in_process_evaluation(
    shared_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ppo_platform.settings import get_settings

    monkeypatch.setenv("PPO_PLATFORM_ENV_PACKAGES", LOCAL_MODULE)
    get_settings.cache_clear()
    result = run_spec(_spec(LOCAL_PIXELS_ENV))  # raised "expected the eval env to be a
    assert result.status == "FINISHED"  # VecEnvWrapper but got DummyVecEnv" before
    assert result.final_eval_mean is not None and math.isfinite(result.final_eval_mean)
    assert 0.0 <= result.final_eval_mean <= 10.0

"""Training, saving and loading a model never imports torch's compiler (`torch._dynamo`), and
once something else has imported it, torch's own "never compile" wrapper takes over."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch
from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.trainers.fast.compiler_free import build_compiler_free
from ppo_platform.trainers.ppo import PlatformPPO

TRAIN_SAVE_LOAD = textwrap.dedent(
    """
    import sys, tempfile
    import torch
    from stable_baselines3.common.env_util import make_vec_env
    from ppo_platform.trainers.ppo import PlatformPPO

    torch.set_num_threads(1)
    for env_id in ("CartPole-v1", "Pendulum-v1"):
        model = PlatformPPO("MlpPolicy", make_vec_env(env_id, n_envs=2, seed=0), n_steps=64,
                             batch_size=32, n_epochs=2, seed=0)
        model.learn(256)
        with tempfile.TemporaryDirectory() as folder:
            model.save(f"{folder}/model.zip")
            loaded = PlatformPPO.load(f"{folder}/model.zip")
            loaded.set_env(make_vec_env(env_id, n_envs=2, seed=1))
            loaded.learn(128)
        assert loaded.policy.optimizer.state, "the loaded optimizer kept no Adam state"
    wrapped = vars(torch.optim.Optimizer.zero_grad.__wrapped__)
    assert "__dynamo_disable" not in wrapped, "torch's wrapper was touched"
    print("dynamo imported:", "torch._dynamo" in sys.modules)
    """
)


def test_a_training_process_never_imports_torchs_compiler() -> None:
    """Build, train (the lean Adam's first step creates the state), save, load and train on:
    in a fresh interpreter, as a training process runs."""
    done = subprocess.run(
        [sys.executable, "-c", TRAIN_SAVE_LOAD], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "dynamo imported: False"


def test_only_the_trainers_optimizer_is_changed() -> None:
    model = PlatformPPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1, seed=0), n_steps=64)
    assert "zero_grad" in vars(model.policy.optimizer)  # bound on the trainer's instance
    other = torch.optim.Adam([torch.nn.Parameter(torch.ones(3))])
    assert "zero_grad" not in vars(other)  # every other optimizer is torch's as it is
    # That torch's own wrapper is untouched is checked in a fresh interpreter (above): in this
    # one, another test may have imported torch's compiler, which then marks it itself.


def test_once_the_compiler_is_imported_torchs_own_disable_takes_over() -> None:
    import torch._dynamo  # what torch.compile would import

    parameter = torch.nn.Parameter(torch.ones(3))
    optimizer = build_compiler_free(torch.optim.Adam, [parameter], lr=0.1)
    parameter.grad = torch.ones(3)
    optimizer.step()
    optimizer.zero_grad()
    assert parameter.grad is None
    original = torch.optim.Optimizer.zero_grad.__wrapped__  # type: ignore[attr-defined]
    marker = original.__dict__["__dynamo_disable"]
    # torch's disabled function, cached where torch's wrapper looks for it
    assert marker is not None and marker.__module__.startswith("torch._dynamo")
    assert optimizer.state_dict()["state"][0]["step"].item() == 1.0

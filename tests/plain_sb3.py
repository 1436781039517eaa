"""Load a saved model in a process where this project cannot be imported: what a user who
takes `model.zip` (and `vecnormalize.pkl`) elsewhere has, stable-baselines3 and gymnasium only.

A module of its own (not conftest): import it as `tests.plain_sb3` (the tuning tests take tests/
off sys.path).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

BLOCKED = ("trainers", "ppo_platform", "api")

# Runs in the child: a meta-path finder refuses this project's packages (installed editable,
# or found on the working directory) before any other finder sees them.
_CHILD = """
import json, sys
BLOCKED = {blocked!r}

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
for name in BLOCKED:
    try:
        __import__(name)
    except ModuleNotFoundError:
        continue
    raise SystemExit(f"{{name}} is importable: the test would prove nothing")

import numpy as np
import gymnasium as gym
import stable_baselines3
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

args = json.loads(sys.argv[1])
cls = getattr(stable_baselines3, args["algorithm"])
model = cls.load(args["model"], device="cpu")
obs = np.load(args["observations"])
if args["normalize"]:
    env = DummyVecEnv([lambda: gym.make(args["env_id"])])
    stats = VecNormalize.load(args["normalize"], env)
    obs = stats.normalize_obs(obs)
actions, _ = model.predict(obs, deterministic=True)
np.save(args["actions"], actions)
print(json.dumps({{
    "class": type(model).__module__ + "." + type(model).__name__,
    "project_modules": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED),
}}))
"""


def plain_sb3_actions(
    model: Path,
    observations: np.ndarray,
    *,
    algorithm: str = "PPO",
    normalize: Path | None = None,
    env_id: str = "CartPole-v1",
    workdir: Path,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Deterministic actions of `model` loaded by stock `stable_baselines3.<algorithm>.load`
    (observations normalized by `normalize`, a VecNormalize pickle, when given), computed in
    a child process where `trainers`, `ppo_platform` and `api` cannot be imported."""
    obs_path, actions_path = workdir / "observations.npy", workdir / "actions.npy"
    np.save(obs_path, observations)
    args = {
        "algorithm": algorithm,
        "model": str(model),
        "observations": str(obs_path),
        "actions": str(actions_path),
        "normalize": str(normalize) if normalize else "",
        "env_id": env_id,
    }
    child = _CHILD.format(blocked=BLOCKED)
    done = subprocess.run(
        [sys.executable, "-c", child, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return np.load(actions_path), json.loads(done.stdout.strip().splitlines()[-1])

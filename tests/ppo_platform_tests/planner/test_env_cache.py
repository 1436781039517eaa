"""The planner's cache of gymnasium's own environments: repeated plans skip gymnasium."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym

from ppo_platform.planner import inspect_env
from ppo_platform.planner.env_cache import cached_env_info

CACHE = Path("cache") / "gymnasium_envs.json"


def test_a_builtin_env_is_cached_and_read_back_equal(platform_home: Path) -> None:
    first = inspect_env("CartPole-v1")
    stored = json.loads((platform_home / CACHE).read_text())
    assert [key.split("@")[0] for key in stored] == ["CartPole-v1"]
    assert cached_env_info("CartPole-v1") == first
    assert inspect_env("CartPole-v1") == first


def test_a_user_registered_env_is_never_cached(platform_home: Path) -> None:
    env_id = "tests/CachelessCartPole-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv")
        gym.registry[env_id].entry_point = lambda **kw: gym.make("CartPole-v1", **kw)
    inspect_env(env_id)
    assert cached_env_info(env_id) is None


def test_a_damaged_cache_file_is_ignored(platform_home: Path) -> None:
    (platform_home / CACHE).parent.mkdir(parents=True, exist_ok=True)
    (platform_home / CACHE).write_text("{not json")
    assert inspect_env("Acrobot-v1").action_kind == "discrete"
    assert cached_env_info("Acrobot-v1") is not None


def test_a_repeated_plan_imports_neither_gymnasium_nor_numpy(
    platform_home: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PPO_PLATFORM_HOME": str(platform_home)}
    probe = (
        "import sys\nfrom typer.testing import CliRunner\nfrom ppo_platform.cli import app\n"
        f"r = CliRunner().invoke(app, ['plan', '--env', 'CartPole-v1', '--budget', '100000', "
        f"'--out', {str(tmp_path / 'out')!r}, '--force'])\n"
        "print(r.exit_code, sorted(m for m in ('gymnasium', 'numpy') if m in sys.modules))\n"
    )
    outputs = [
        subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
        ).stdout.strip()
        for _ in range(2)
    ]
    assert outputs == ["0 ['gymnasium', 'numpy']", "0 []"]

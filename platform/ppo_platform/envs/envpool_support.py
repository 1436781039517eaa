"""Which specs EnvPool can run as written, and EnvPool's options for them.

EnvPool runs its own C++ copies of the envs, so the spec's per-env wrappers must be ones EnvPool
expresses with its own options: for ALE games the `atari` wrapper (noop_max, frame_skip,
screen_size, terminal_on_life_loss, clip_reward, action_repeat_probability) and `frame_stack`;
for the other envs none but `frame_stack` (applied at the vector level as for every env).
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ppo_platform.spec import wrappers as v
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.trainers.quiet_imports import import_keeping_numpy_rng

ALE_PREFIX = "ALE/"
# ALE v5's own frame skip and sticky-action probability (gymnasium's defaults for ALE/<Game>-v5).
ALE_FRAMESKIP, ALE_STICKY = 4, 0.25
MUJOCO_ENTRY = "gymnasium.envs.mujoco"


def installed() -> bool:
    return importlib.util.find_spec("envpool") is not None


def task_id(env_id: str) -> str:
    """EnvPool's id for a gymnasium id (ALE/Pong-v5 -> Pong-v5)."""
    return env_id.removeprefix(ALE_PREFIX)


def supported_ids() -> frozenset[str]:
    return frozenset(import_keeping_numpy_rng("envpool").list_all_envs())


def _atari_options(spec: ExperimentSpec) -> dict[str, Any] | str:
    """EnvPool's Atari options equal to the spec's `atari` and `frame_stack`, or the obstacle."""
    atari = [w for w in spec.env.wrappers if isinstance(w, v.AtariWrapperSpec)]
    others = [
        w.name
        for w in spec.env.wrappers
        if not isinstance(w, (v.AtariWrapperSpec, v.FrameStackSpec))
    ]
    if not atari or others:
        return "EnvPool runs ALE games with the atari wrapper's preprocessing (and frame_stack)"
    wrapper = atari[0]
    kwargs = dict(spec.env.kwargs)
    game_skip = kwargs.pop("frameskip", ALE_FRAMESKIP)
    sticky = kwargs.pop("repeat_action_probability", ALE_STICKY)
    if kwargs:
        return f"EnvPool takes no {', '.join(sorted(kwargs))} (env.kwargs)"
    if not isinstance(game_skip, int) or (sticky and wrapper.action_repeat_probability):
        return "a random frameskip, or sticky actions in both the game and the wrapper"
    if game_skip > 1 and wrapper.frame_skip > 1:
        return f"frames would be skipped twice (set env.kwargs.frameskip: 1), {game_skip} x "
        f"{wrapper.frame_skip}"
    options = {"repeat_action_probability": sticky or wrapper.action_repeat_probability}
    return {
        **options,
        "noop_max": wrapper.noop_max,
        "frame_skip": game_skip * wrapper.frame_skip,
        "img_height": wrapper.screen_size,
        "img_width": wrapper.screen_size,
        "episodic_life": wrapper.terminal_on_life_loss,
        "reward_clip": wrapper.clip_reward,
        "stack_num": v.frame_stack_of(spec.env.wrappers),
        "gray_scale": True,
    }


def options(spec: ExperimentSpec) -> dict[str, Any] | str:
    """`envpool.make` keyword arguments for the spec (without num_envs and seed), or the reason
    EnvPool cannot run it as written."""
    if not installed():
        return "EnvPool is not installed"
    if task_id(spec.env.id) not in supported_ids():
        return f"EnvPool has no {task_id(spec.env.id)}"
    if spec.env.id.startswith(ALE_PREFIX):
        return _atari_options(spec)
    per_env = [w.name for w in spec.env.wrappers if not isinstance(w, v.FrameStackSpec)]
    if per_env:
        return f"EnvPool cannot express the per-env wrappers {', '.join(per_env)}"
    if spec.env.kwargs:
        return "EnvPool takes no env.kwargs for this env"
    return {}


def episode_length_scale(spec: ExperimentSpec) -> int:
    """Game steps per agent step of an ALE game: the platform's Monitor counts the game's."""
    atari = [w for w in spec.env.wrappers if isinstance(w, v.AtariWrapperSpec)]
    return atari[0].frame_skip if atari and spec.env.id.startswith(ALE_PREFIX) else 1


AUTO_SCOPE = "auto picks it for ALE games and MuJoCo only"


def outside_auto_scope(spec: ExperimentSpec) -> str | None:
    """Why `auto` does not consider EnvPool for the spec, or None where it does: ALE games and
    MuJoCo, where it pays (a C++ pool instead of Python wrappers or one Python env per copy).

    Not a single MuJoCo env: gymnasium's env has no Python wrapper to save there, and every
    EnvPool step hands the action to its worker thread and waits for it (more CPU per step).
    Answered without importing EnvPool (it takes seconds, and imports jax)."""
    import gymnasium

    if spec.env.id.startswith(ALE_PREFIX):
        return None
    entry = getattr(gymnasium.registry.get(spec.env.id), "entry_point", "")
    if not (isinstance(entry, str) and entry.startswith(MUJOCO_ENTRY)):
        return AUTO_SCOPE
    return None if spec.env.n_envs > 1 else "auto leaves a single MuJoCo env to gymnasium"


def auto_picks(spec: ExperimentSpec) -> bool:
    """Whether `auto` picks EnvPool: in its scope, and where EnvPool runs the spec as written."""
    return outside_auto_scope(spec) is None and obstacle(spec) is None


def obstacle(spec: ExperimentSpec) -> str | None:
    """Why EnvPool cannot run the spec's env as written, or None if it can."""
    found = options(spec)
    return found if isinstance(found, str) else None

"""Which specs EnvPool can run as written, and EnvPool's options for them.

EnvPool runs its own C++ copies of the envs, so the spec's per-env wrappers must be ones EnvPool
expresses with its own options: for ALE games the `atari` wrapper (noop_max, frame_skip,
screen_size, terminal_on_life_loss, clip_reward, action_repeat_probability) and `frame_stack`;
for the other envs none but `frame_stack` (applied at the vector level as for every env).
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ppo_platform.envs import vocabulary as v
from ppo_platform.spec.experiment import ExperimentSpec

ALE_PREFIX = "ALE/"
# ALE keyword arguments EnvPool takes (by its own names); frameskip 1 means the wrapper skips.
ALE_KWARGS = {"repeat_action_probability": "repeat_action_probability"}


def installed() -> bool:
    return importlib.util.find_spec("envpool") is not None


def task_id(env_id: str) -> str:
    """EnvPool's id for a gymnasium id (ALE/Pong-v5 -> Pong-v5)."""
    return env_id.removeprefix(ALE_PREFIX)


def supported_ids() -> frozenset[str]:
    import envpool

    return frozenset(envpool.list_all_envs())


def _atari_options(spec: ExperimentSpec) -> dict[str, Any] | str:
    """EnvPool's Atari options equal to the spec's `atari` and `frame_stack`, or the obstacle."""
    atari = [w for w in spec.env.wrappers if isinstance(w, v.AtariWrapperSpec)]
    others = [
        w.name
        for w in spec.env.wrappers
        if not isinstance(w, (v.AtariWrapperSpec, v.FrameStackSpec))
    ]
    if not atari or others:
        return "EnvPool runs ALE games with the atari wrapper's preprocessing (and frame_stack) only"
    wrapper = atari[0]
    kwargs = dict(spec.env.kwargs)
    if kwargs.pop("frameskip", 1) != 1:
        return "env.kwargs.frameskip other than 1 (EnvPool skips the atari wrapper's frame_skip)"
    unknown = sorted(set(kwargs) - set(ALE_KWARGS))
    if unknown:
        return f"EnvPool takes no {', '.join(unknown)} (env.kwargs)"
    options: dict[str, Any] = {ALE_KWARGS[k]: value for k, value in kwargs.items()}
    if wrapper.action_repeat_probability:
        options["repeat_action_probability"] = wrapper.action_repeat_probability
    return {
        **options,
        "noop_max": wrapper.noop_max,
        "frame_skip": wrapper.frame_skip,
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


def obstacle(spec: ExperimentSpec) -> str | None:
    """Why EnvPool cannot run the spec's env as written, or None if it can."""
    found = options(spec)
    return found if isinstance(found, str) else None

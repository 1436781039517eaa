"""Apply `env.wrappers` (data) to one env, and the vector-level part to the vectorized env.

The same functions build training and evaluation envs, in every process, so evaluation sees
exactly what training sees. Episode returns are recorded (SB3's Monitor) after the listed
wrappers, except before `atari`: its reward clipping and life-loss episodes would hide the game
score, which is what SB3, the zoo and the papers report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ppo_platform.envs.registry import registered_wrappers
from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.spec import wrappers as v


def _issue(index: int, wrapper: Any, message: str, fix: str) -> SpecError:
    return SpecError([SpecIssue(f"env.wrappers.{index}", message, wrapper.name, fix=fix)])


def _package_wrapper(env: Any, index: int, wrapper: v.PackageWrapperSpec) -> Any:
    factory = registered_wrappers().get(wrapper.name)
    if factory is None:
        known = sorted(v.BUILTIN_WRAPPERS) + sorted(registered_wrappers())
        raise _issue(
            index,
            wrapper,
            "is not a wrapper: neither built in nor registered by an env package.",
            f"use one of {', '.join(known)}; a package's own wrappers are available once the "
            "operator names the package (PPO_PLATFORM_ENV_PACKAGES or --env-package).",
        )
    return factory(env, **wrapper.params)


def _refuse_double_frame_skip(env: Any, index: int, wrapper: v.AtariWrapperSpec) -> None:
    """ALE v5 skips 4 frames itself; with the wrapper's skip on top an action would last 16."""
    game_skip = getattr(env.unwrapped, "_frameskip", 1)
    if wrapper.frame_skip > 1 and isinstance(game_skip, int) and game_skip > 1:
        env.close()
        raise _issue(
            index,
            wrapper,
            f"would skip frames twice: the game skips {game_skip} and the wrapper "
            f"{wrapper.frame_skip} ({game_skip * wrapper.frame_skip} frames per action).",
            "set env.kwargs.frameskip: 1 (as `ppo-platform plan` does for ALE games), or the "
            "wrapper's frame_skip: 1.",
        )


def opencv_installed() -> bool:
    """True if OpenCV (cv2) imports here: the atari and resize wrappers scale frames with it."""
    try:
        import cv2  # noqa: F401
    except ImportError:
        return False
    return True


def _refuse_missing_opencv(env: Any, index: int, wrapper: Any) -> None:
    """The atari wrapper's frames are resized by OpenCV only at the first step; say so now."""
    if isinstance(wrapper, (v.AtariWrapperSpec, v.ResizeSpec)) and not opencv_installed():
        env.close()
        raise _issue(
            index,
            wrapper,
            f"the {wrapper.name} wrapper needs OpenCV (cv2), which is not installed here.",
            "install the atari extra: pip install 'ppo-platform[atari]' (it installs "
            "opencv-python-headless), or remove the wrapper.",
        )


def _one(env: Any, wrapper: Any) -> Any:
    from gymnasium import wrappers as gw

    if isinstance(wrapper, v.AtariWrapperSpec):
        from stable_baselines3.common.atari_wrappers import AtariWrapper

        return AtariWrapper(
            env,
            noop_max=wrapper.noop_max,
            frame_skip=wrapper.frame_skip,
            screen_size=wrapper.screen_size,
            terminal_on_life_loss=wrapper.terminal_on_life_loss,
            clip_reward=wrapper.clip_reward,
            action_repeat_probability=wrapper.action_repeat_probability,
        )
    if isinstance(wrapper, v.GrayscaleSpec):
        return gw.GrayscaleObservation(env, keep_dim=wrapper.keep_dim)
    if isinstance(wrapper, v.ResizeSpec):
        return gw.ResizeObservation(env, shape=(wrapper.height, wrapper.width))
    if isinstance(wrapper, v.TimeLimitSpec):
        return gw.TimeLimit(env, max_episode_steps=wrapper.max_episode_steps)
    if isinstance(wrapper, v.ClipActionSpec):
        return gw.ClipAction(env)
    if isinstance(wrapper, v.RescaleActionSpec):
        import numpy as np

        return gw.RescaleAction(env, np.float32(wrapper.min_action), np.float32(wrapper.max_action))
    if isinstance(wrapper, v.FlattenObservationSpec):
        return gw.FlattenObservation(env)
    raise AssertionError(f"unhandled wrapper {wrapper!r}")


def wrap_env(env: Any, wrappers: Sequence[Any], monitor: bool = True) -> Any:
    """`env` with the listed per-env wrappers applied in order (frame_stack is vector-level),
    and SB3's Monitor where episode returns are recorded. SpecError names a wrapper that does
    not fit the env (SB3 is imported only for Monitor and atari: `validate` stays light)."""
    monitored = not monitor
    for index, wrapper in enumerate(wrappers):
        if isinstance(wrapper, v.FrameStackSpec):
            continue
        if isinstance(wrapper, v.AtariWrapperSpec) and not monitored:
            env, monitored = _monitor(env), True
        if isinstance(wrapper, v.PackageWrapperSpec):
            env = _package_wrapper(env, index, wrapper)
            continue
        _refuse_missing_opencv(env, index, wrapper)
        if isinstance(wrapper, v.AtariWrapperSpec):
            _refuse_double_frame_skip(env, index, wrapper)
        try:
            env = _one(env, wrapper)
        except SpecError:
            raise
        except Exception as error:  # e.g. atari on a non-ALE env, resize on vectors
            env.close()
            raise _issue(
                index,
                wrapper,
                f"cannot wrap this environment: {type(error).__name__}: {error}",
                _fit_hint(wrapper),
            ) from None
    return env if monitored else _monitor(env)


def _monitor(env: Any) -> Any:
    from stable_baselines3.common.monitor import Monitor

    return Monitor(env)


def _fit_hint(wrapper: Any) -> str:
    if isinstance(wrapper, v.AtariWrapperSpec):
        return "atari wraps ALE games only (ALE/<Game>-v5, pip install 'ppo-platform[atari]')."
    if isinstance(wrapper, (v.GrayscaleSpec, v.ResizeSpec)):
        return f"{wrapper.name} needs image observations (height x width x channels)."
    if isinstance(wrapper, (v.ClipActionSpec, v.RescaleActionSpec)):
        return f"{wrapper.name} needs continuous (Box) actions."
    return "remove the wrapper or correct its parameters."


def wrap_vec_env(venv: Any, wrappers: Sequence[Any]) -> Any:
    """The vector-level part: frame_stack (SB3's VecFrameStack), then image observations put
    channels first (VecTransposeImage), as SB3 does for a CNN policy; applied to training and
    evaluation envs alike so their observations and wrappers match."""
    from stable_baselines3.common.preprocessing import (
        is_image_space,
        is_image_space_channels_first,
    )
    from stable_baselines3.common.vec_env import VecFrameStack, VecTransposeImage

    stack = v.frame_stack_of(wrappers)
    if stack > 1:
        venv = VecFrameStack(venv, n_stack=stack)
    space = venv.observation_space
    if is_image_space(space, check_channels=False) and not is_image_space_channels_first(space):
        venv = VecTransposeImage(venv)
    return venv

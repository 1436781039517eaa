"""The zoo's `env_wrapper` and `frame_stack` keys as `env.wrappers` data.

The zoo names wrapper classes by import path; a spec names wrappers from the platform's
vocabulary. The classes the vocabulary reproduces are translated (with their arguments); any
other class is an issue naming it: the platform imports nothing by name.
"""

from __future__ import annotations

from typing import Any

from ppo_platform.spec.wrappers import BUILTIN_WRAPPERS

# The zoo's class path -> (vocabulary name, {zoo argument: vocabulary parameter}).
KNOWN_WRAPPERS: dict[str, tuple[str, dict[str, str]]] = {
    "stable_baselines3.common.atari_wrappers.AtariWrapper": (
        "atari",
        {k: k for k in BUILTIN_WRAPPERS["atari"].model_fields if k != "name"},
    ),
    "gymnasium.wrappers.TimeLimit": ("time_limit", {"max_episode_steps": "max_episode_steps"}),
    "gymnasium.wrappers.ClipAction": ("clip_action", {}),
    "gymnasium.wrappers.RescaleAction": (
        "rescale_action",
        {"min_action": "min_action", "max_action": "max_action"},
    ),
    "gymnasium.wrappers.FlattenObservation": ("flatten_observation", {}),
    "gymnasium.wrappers.GrayscaleObservation": ("grayscale", {"keep_dim": "keep_dim"}),
    "gymnasium.wrappers.transform_observation.GrayscaleObservation": (
        "grayscale",
        {"keep_dim": "keep_dim"},
    ),
    "gymnasium.wrappers.ResizeObservation": ("resize", {"shape": "shape"}),
    "rl_zoo3.wrappers.YAMLCompatResizeObservation": ("resize", {"shape": "shape"}),
}


class UnknownWrapper(ValueError):
    """A zoo wrapper the vocabulary has no entry for (or arguments it cannot take)."""


def _one(item: Any) -> dict[str, Any]:
    arguments: Any
    if isinstance(item, str):
        path, arguments = item, {}
    elif isinstance(item, dict) and len(item) == 1:
        path, arguments = next(iter(item.items()))
        arguments = arguments or {}
    else:
        raise UnknownWrapper(f"{item!r} is not a wrapper class path (with its arguments)")
    if path not in KNOWN_WRAPPERS or not isinstance(arguments, dict):
        raise UnknownWrapper(f"{path} is not in the platform's wrapper vocabulary")
    name, parameters = KNOWN_WRAPPERS[path]
    unknown = sorted(set(arguments) - set(parameters))
    if unknown:
        raise UnknownWrapper(f"{path} takes arguments the platform's {name} does not: {unknown}")
    wrapper: dict[str, Any] = {"name": name}
    for key, value in arguments.items():
        if parameters[key] == "shape":  # [height, width]
            if not (isinstance(value, (list, tuple)) and len(value) == 2):
                raise UnknownWrapper(f"{path}: shape must be [height, width], not {value!r}")
            wrapper["height"], wrapper["width"] = value
        else:
            wrapper[parameters[key]] = value
    return wrapper


def zoo_wrappers(value: Any) -> list[dict[str, Any]]:
    """`env_wrapper` (one class path, a {path: arguments} mapping, or a list of them) as
    vocabulary entries; UnknownWrapper names the first one the vocabulary cannot express."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [_one(item) for item in items]


def with_frame_stack_last(wrappers: list[dict[str, Any]], stack: int | None) -> list[Any]:
    """The wrappers with the zoo's frame_stack (VecFrameStack, applied last) at the end."""
    rest = [w for w in wrappers if w.get("name") != "frame_stack"]
    return [*rest, {"name": "frame_stack", "n": stack}] if stack else rest

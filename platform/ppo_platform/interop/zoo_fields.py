"""One converter per rl-baselines3-zoo hyperparameter key: zoo value -> spec fields.

`convert_entry` turns a zoo PPO entry (already read from YAML) into plain spec data plus a list
of issues, one per key that cannot be expressed in a spec (each names the key, the value and
the fix). Keys the entry omits keep the spec's defaults, which are stable-baselines3's, as the
zoo's are. The schema and the refusal rules are applied afterwards, exactly as `validate` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ppo_platform.errors import SpecIssue
from ppo_platform.interop.literals import Activation, LiteralError, parse_literal
from ppo_platform.interop.zoo_wrappers import UnknownWrapper, with_frame_stack_last, zoo_wrappers

SpecData = dict[str, Any]
POLICIES = ("MlpPolicy", "CnnPolicy", "MultiInputPolicy")  # the platform picks by obs space
LINEAR_PREFIX = "lin_"


class ZooKeyError(ValueError):
    """A zoo value that no spec field can hold; `fix` says what to do instead."""

    def __init__(self, message: str, fix: str, path_suffix: str = "") -> None:
        super().__init__(message)
        self.fix = fix
        self.path_suffix = path_suffix


def _set(data: SpecData, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def _number(value: Any, integer: bool = False) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str):
            raise ZooKeyError(
                "is a string, not a number (PyYAML reads 1e-3 without a dot as a string).",
                "write it as a number, e.g. !!float 1e-3 or 0.001.",
            )
        raise ZooKeyError(f"must be a number, not {type(value).__name__}.", "write a number.")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise ZooKeyError("must be a whole number.", "write a whole number.")
        return int(value)
    return value


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _schedule(value: Any) -> Any:
    """A number (constant) or the zoo's `lin_<x>` (linear from x to 0)."""
    if isinstance(value, str):
        if value.startswith(LINEAR_PREFIX):
            try:
                start = float(value[len(LINEAR_PREFIX) :])
            except ValueError:
                start = None
            if start is not None:
                return {"start": start, "schedule": "linear"}
        elif _looks_numeric(value):
            _number(value)  # a number PyYAML read as a string: say so
        raise ZooKeyError(
            "is not a number or a lin_<x> schedule.",
            "write a number (constant) or lin_<x>, e.g. lin_0.001 (linear from x to 0).",
        )
    return _number(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ZooKeyError(f"must be true or false, not {value!r}.", "write true or false.")
    return value


def _literal(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return parse_literal(value)
    except LiteralError as exc:
        raise ZooKeyError(
            f"is not a Python literal the platform reads: it {exc}.",
            "write a literal: numbers, strings, True/False, lists, {...} or dict(key=value), "
            "activations as nn.ReLU / nn.Tanh / nn.ELU / nn.LeakyReLU.",
        ) from None


NORMALIZE_KEYS = {
    "norm_obs": "env.normalize.obs",
    "norm_reward": "env.normalize.reward",
    "clip_obs": "env.normalize.clip_obs",
    "clip_reward": "env.normalize.clip_reward",
}


def _normalize(data: SpecData, value: Any) -> None:
    value = _literal(value)
    if isinstance(value, bool):
        _set(data, "env.normalize.obs", value)
        _set(data, "env.normalize.reward", value)
        return
    if not isinstance(value, dict):
        raise ZooKeyError(
            f"must be true/false or a dict of VecNormalize arguments, not {value!r}.",
            "write true, false or \"{'norm_obs': True, 'norm_reward': False}\".",
        )
    unknown = sorted(set(value) - set(NORMALIZE_KEYS))
    if unknown:
        raise ZooKeyError(
            f"sets VecNormalize argument(s) {', '.join(unknown)}, which a spec cannot express "
            "(its normalization uses advantage.gamma).",
            f"keep only {', '.join(NORMALIZE_KEYS)}.",
            path_suffix="." + unknown[0],
        )
    # VecNormalize's defaults: observations and rewards both normalized.
    _set(data, "env.normalize.obs", True)
    _set(data, "env.normalize.reward", True)
    for key, item in value.items():
        _set(data, NORMALIZE_KEYS[key], item)


def _net_arch(data: SpecData, value: Any) -> None:
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"pi", "vf"})
        if unknown or "pi" not in value or "vf" not in value:
            raise ZooKeyError(
                f"must be dict(pi=[...], vf=[...]); it has the keys {sorted(value)}.",
                "write net_arch=[64, 64] or net_arch=dict(pi=[64, 64], vf=[64, 64]).",
                path_suffix=".net_arch",
            )
        _set(data, "policy.net_arch", value["pi"])
        if value["vf"] != value["pi"]:
            _set(data, "policy.value_net_arch", value["vf"])
        return
    if isinstance(value, list) and any(isinstance(item, dict) for item in value):
        raise ZooKeyError(
            "shares layers between actor and critic (the old SB3 syntax [64, dict(pi=...)]); "
            "a spec's actor and critic are separate networks.",
            "write net_arch=dict(pi=[...], vf=[...]).",
            path_suffix=".net_arch",
        )
    _set(data, "policy.net_arch", value)


def _policy_kwargs(data: SpecData, value: Any) -> None:
    kwargs = _literal(value)
    if not isinstance(kwargs, dict):
        raise ZooKeyError(
            f"must be a dict, not {type(kwargs).__name__}.", "write dict(net_arch=[64, 64], ...)."
        )
    unknown = sorted(set(kwargs) - {"net_arch", "activation_fn", "ortho_init", "log_std_init"})
    if unknown:
        raise ZooKeyError(
            f"sets {', '.join(unknown)}, which a spec cannot express.",
            "keep only net_arch, activation_fn, ortho_init and log_std_init.",
            path_suffix="." + unknown[0],
        )
    if "net_arch" in kwargs:
        _net_arch(data, kwargs["net_arch"])
    if "activation_fn" in kwargs:
        activation = kwargs["activation_fn"]
        if not isinstance(activation, Activation):
            raise ZooKeyError(
                f"must name an activation such as nn.ReLU, not {activation!r}.",
                "write activation_fn=nn.ReLU (or nn.Tanh, nn.ELU, nn.LeakyReLU).",
                path_suffix=".activation_fn",
            )
        _set(data, "policy.activation", activation.name)
    if "ortho_init" in kwargs:
        _set(data, "policy.ortho_init", kwargs["ortho_init"])
    if "log_std_init" in kwargs:
        _set(data, "policy.log_std_init", kwargs["log_std_init"])


def _policy(data: SpecData, value: Any) -> None:
    if value not in POLICIES:
        raise ZooKeyError(
            "is not a policy the platform builds (it picks MlpPolicy, CnnPolicy or "
            "MultiInputPolicy from the observation space).",
            "use MlpPolicy (recurrent policies are not supported).",
        )
    if value == "CnnPolicy":  # SB3's CNN heads: the Nature CNN's features feed pi and vf directly
        data.setdefault("policy", {}).setdefault("net_arch", [])


def _env_wrapper(data: SpecData, value: Any) -> None:
    try:
        wrappers = zoo_wrappers(value)
    except UnknownWrapper as exc:
        raise ZooKeyError(
            f"is an env wrapper the platform cannot express ({exc}); the platform imports "
            "nothing by name.",
            "remove it, or use the platform's wrappers (env.wrappers: atari, frame_stack, "
            "grayscale, resize, time_limit, clip_action, rescale_action, flatten_observation).",
        ) from None
    env = data.setdefault("env", {})
    env["wrappers"] = [*wrappers, *env.get("wrappers", [])]  # frame_stack may be there already


def _frame_stack(data: SpecData, value: Any) -> None:
    stack = _integer(value)
    env = data.setdefault("env", {})
    env["wrappers"] = with_frame_stack_last(env.get("wrappers", []), stack)


def _unexpressible(what: str, fix: str) -> Callable[[SpecData, Any], None]:
    def refuse(data: SpecData, value: Any) -> None:
        if value is None or value == []:  # written out but empty: nothing to wrap
            return
        raise ZooKeyError(f"{what}; the platform has none and imports nothing by name.", fix)

    return refuse


def _to(path: str, read: Callable[[Any], Any]) -> Callable[[SpecData, Any], None]:
    def convert(data: SpecData, value: Any) -> None:
        _set(data, path, read(value))

    return convert


def _integer(value: Any) -> int:
    return int(_number(value, integer=True))


def _plain(value: Any) -> Any:
    return value  # the schema checks it


CONVERTERS: dict[str, Callable[[SpecData, Any], None]] = {
    "n_envs": _to("env.n_envs", _integer),
    "n_timesteps": _to("budget.total_timesteps", _integer),
    "policy": _policy,
    "n_steps": _to("rollout.n_steps", _integer),
    "batch_size": _to("update.minibatch_size", _integer),
    "n_epochs": _to("update.epochs", _integer),
    "learning_rate": _to("update.learning_rate", _schedule),
    "max_grad_norm": _to("update.max_grad_norm", _number),
    "clip_range": _to("surrogate.clip_epsilon", _schedule),
    "clip_range_vf": _to("surrogate.clip_value", _number),
    "vf_coef": _to("surrogate.value_coef", _number),
    "ent_coef": _to("surrogate.entropy_coef", _number),
    "normalize_advantage": _to("surrogate.normalize_advantage", _bool),
    "target_kl": _to("surrogate.target_kl", _number),
    "gamma": _to("advantage.gamma", _number),
    "gae_lambda": _to("advantage.gae_lambda", _number),
    "use_sde": _to("policy.use_sde", _bool),
    "sde_sample_freq": _to("policy.sde_sample_freq", _integer),
    "normalize": _normalize,
    "policy_kwargs": _policy_kwargs,
    "env_kwargs": _to("env.kwargs", _plain),
    "env_wrapper": _env_wrapper,
    "vec_env_wrapper": _unexpressible(
        "is a VecEnv wrapper (a Python class the zoo imports by name)",
        "remove vec_env_wrapper.",
    ),
    "callback": _unexpressible(
        "is a training callback (a Python class the zoo imports by name)",
        "remove callback; the platform's diagnostics monitor runs on every update.",
    ),
    "frame_stack": _frame_stack,
}


def convert_entry(entry: dict[str, Any]) -> tuple[SpecData, list[SpecIssue]]:
    """Spec data for a zoo entry, and one issue per key that cannot be expressed."""
    data: SpecData = {}
    issues: list[SpecIssue] = []
    for key, value in entry.items():
        converter = CONVERTERS.get(str(key))
        if converter is None:
            issues.append(
                SpecIssue(
                    str(key),
                    "is not a PPO hyperparameter the platform can express.",
                    value,
                    fix=f"remove it; known keys: {', '.join(sorted(CONVERTERS))}.",
                )
            )
            continue
        try:
            converter(data, value)
        except ZooKeyError as exc:
            issues.append(SpecIssue(f"{key}{exc.path_suffix}", str(exc), value, fix=exc.fix))
    return data, issues

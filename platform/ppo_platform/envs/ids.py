"""The one check that an env id names a registered gymnasium environment, and its suggestions.

`run`, `validate`, `sweep`, `tune` and `plan` all go through `usable_env` (which calls
`check_env_id` and creates the env once), so the same typo or unusable env gets the same answer.
gymnasium is imported inside the functions: `validate` imports spec/ and must stay fast.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ppo_platform.envs.extras import extra_for, extra_installed, install_hint
from ppo_platform.envs.factory import EnvFactory
from ppo_platform.envs.packages import import_env_packages
from ppo_platform.envs.vectorization import check_vectorization
from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.spec.experiment import OWN_ENV_HINT, ExperimentSpec
from ppo_platform.spec.resources import budget_refusals, observation_size_of
from ppo_platform.spec.wrappers import frame_stack_of

MAX_SUGGESTIONS = 3
# Ids whose env imports and builds another one named in its kwargs (shimmy's compatibility envs
# take `env_id: "module:Env"`): a spec never names code, so they are refused by rule.
IMPORTING_ENV_IDS = frozenset({"GymV21Environment-v0", "GymV26Environment-v0"})
MODULE_REFERENCE = re.compile(r"^\s*[A-Za-z_][\w.]*\s*:\s*[A-Za-z_][\w.]*\s*$")
IMPORT_RULE = "imports_by_name"
# Env kwargs are a few numbers and names; a map (FrozenLake's desc) a few thousand cells.
MAX_KWARGS_BYTES = 16 * 1024
KWARGS_RULE = "oversized_env_kwargs"


def registered_env_ids() -> list[str]:
    """Every id gymnasium knows, including our own (ppo_platform/GridWorld-v0) and those the
    operator's env packages (and ale_py, when installed) register."""
    import gymnasium

    from ppo_platform.envs.own import register_envs

    import_env_packages()
    register_envs()
    return list(gymnasium.registry)


def matching_env_ids(contains: str | None = None) -> list[str]:
    """Registered ids (sorted) containing `contains`, case-insensitively, leaving out those
    whose extra (mujoco, atari, box2d) is not installed here."""
    import gymnasium

    needle = (contains or "").lower()
    return sorted(
        name
        for name in registered_env_ids()
        if needle in name.lower() and extra_installed(name, gymnasium.registry[name].entry_point)
    )


def close_env_ids(env_id: str, known: Iterable[str]) -> list[str]:
    """Up to three registered ids close to `env_id`: case-insensitive near matches first, then
    ids that contain it (so `cartpole` finds CartPole-v0 and CartPole-v1)."""
    known = list(known)
    lowered = {name.lower(): name for name in known}
    needle = env_id.lower()
    close = [lowered[m] for m in difflib.get_close_matches(needle, list(lowered), n=3)]
    close += [name for name in known if needle in name.lower() and name not in close]
    return close[:MAX_SUGGESTIONS]


def unknown_env_error(env_id: str, known: Iterable[str], source: str | None = None) -> SpecError:
    """The SpecError (field env.id) for an id gymnasium does not know, with close matches."""
    close = close_env_ids(env_id, known)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    extra = extra_for(env_id, entry_point="")
    if extra:  # an ALE id without ale_py: the extra registers it
        hint += f"{install_hint(env_id, '')}; "
    return SpecError(
        [
            SpecIssue(
                "env.id",
                "is not a registered gymnasium environment.",
                env_id,
                fix=f"{hint}use a registered id such as CartPole-v1 (`ppo-platform envs` lists "
                f"them); for your own environment, {OWN_ENV_HINT}.",
            )
        ],
        source,
    )


def check_env_id(env_id: str, source: str | None = None) -> None:
    """Raise a SpecError naming env.id, the value and close matches if `env_id` is unknown."""
    import gymnasium

    import_env_packages()  # once per process; then a set lookup
    if env_id in gymnasium.registry:  # a dict lookup: the service checks every submission
        return
    known = registered_env_ids()  # registers ours too (a first call may come before that)
    if env_id not in known:
        raise unknown_env_error(env_id, known, source)


def refuse_importing_env(env_id: str, kwargs: Mapping[str, Any], source: str | None = None) -> None:
    """SpecError for an env that would import code by name: a compatibility id, or a kwarg
    that names a module (`module:Env`), whatever is installed."""
    issues = []
    if env_id in IMPORTING_ENV_IDS:
        issues.append(
            SpecIssue(
                "env.id",
                "refused: this compatibility env imports the env named in its kwargs.",
                env_id,
                fix="use the environment's own registered id.",
                rule=IMPORT_RULE,
            )
        )
    for name, value in kwargs.items():
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and MODULE_REFERENCE.match(v) for v in values):
            issues.append(
                SpecIssue(
                    f"env.kwargs.{name}",
                    "refused: names a module (`module:Name`); a spec never imports code.",
                    value,
                    fix="name a registered env id; code that registers envs is named by the "
                    "operator (PPO_PLATFORM_ENV_PACKAGES).",
                    rule=IMPORT_RULE,
                )
            )
    if issues:
        raise SpecError(issues, source)


def refuse_oversized_kwargs(kwargs: Mapping[str, Any], source: str | None = None) -> None:
    """SpecError for env kwargs over MAX_KWARGS_BYTES (as JSON): checked before any env is
    built from them, so a huge map costs nothing."""
    size = len(json.dumps(kwargs, default=repr))
    if size > MAX_KWARGS_BYTES:
        issue = SpecIssue(
            "env.kwargs",
            f"refused: {size} bytes of keyword arguments, over the limit of {MAX_KWARGS_BYTES}.",
            None,
            fix="use a smaller map or fewer arguments (a FrozenLake desc of at most ~120 x 120).",
            rule=KWARGS_RULE,
        )
        raise SpecError([issue], source)


# Training renders nothing; `human` would open a window per env (and block on a server).
ALLOWED_RENDER_MODES = (None, "rgb_array")


def _env_issue(path: str, message: str, value: object, fix: str, source: str | None) -> SpecError:
    return SpecError([SpecIssue(path, message, value, fix=fix)], source)


def _unsupported_space(space: Any, observation: bool) -> str | None:
    """The name of a space SB3's PPO cannot use, or None if it can."""
    from gymnasium import spaces

    leaves = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
    if isinstance(space, leaves):
        return None
    if observation and isinstance(space, spaces.Dict):  # MultiInputPolicy: flat dicts only
        nested = [s for s in space.spaces.values() if not isinstance(s, leaves)]
        return f"Dict containing {type(nested[0]).__name__}" if nested else None
    return type(space).__name__


def _make_env(
    env_id: str, kwargs: Mapping[str, Any], wrappers: Sequence[Any], source: str | None
) -> Any:
    """The env as training builds it (wrappers included, Monitor aside)."""
    import gymnasium

    factory = EnvFactory(env_id, {**kwargs, "render_mode": None}, wrappers, monitor=False)
    try:
        env = factory.make()
    except TypeError as exc:  # an unknown or mistyped keyword argument
        raise _env_issue(
            "env.kwargs",
            f"gymnasium cannot create {env_id} with these arguments: {exc}.",
            dict(kwargs) or None,
            "remove or correct the keyword arguments (see the environment's documentation).",
            source,
        ) from None
    except (ImportError, gymnasium.error.DependencyNotInstalled) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _env_issue(
            "env.id",
            f"needs a dependency that is not installed: {first_line}",
            env_id,
            f"{install_hint(env_id)}, or pick another env.",
            source,
        ) from None
    except Exception as exc:  # deprecated versions, bad argument values, broken envs
        raise _env_issue(
            "env.id",
            f"gymnasium cannot create this environment: {type(exc).__name__}: {exc}",
            env_id,
            "pick a current version of the environment or correct env.kwargs.",
            source,
        ) from None
    try:
        return factory.wrap(env)
    except SpecError as error:  # a wrapper that does not fit: named by its place in the list
        raise SpecError(error.issues, source) from None


@contextmanager
def usable_env(
    env_id: str,
    kwargs: Mapping[str, Any] | None = None,
    source: str | None = None,
    wrappers: Sequence[Any] = (),
) -> Iterator[Any]:
    """The env, created once (with `wrappers`) and closed on exit; SpecError unless `env_id` is
    registered, can be created with `kwargs`, takes its wrappers and has spaces PPO can use.
    The one env check of run, validate, sweep, tune and plan."""
    kwargs = dict(kwargs or {})
    refuse_oversized_kwargs(kwargs, source)
    refuse_importing_env(env_id, kwargs, source)
    if kwargs.get("render_mode") not in ALLOWED_RENDER_MODES:
        raise _env_issue(
            "env.kwargs.render_mode",
            "is not allowed: training renders nothing.",
            kwargs["render_mode"],
            "remove render_mode (or use rgb_array).",
            source,
        )
    check_env_id(env_id, source)
    env = _make_env(env_id, kwargs, wrappers, source)
    try:
        for observation, space in ((True, env.observation_space), (False, env.action_space)):
            unsupported = _unsupported_space(space, observation)
            if unsupported:
                kind = "observation" if observation else "action"
                raise _env_issue(
                    "env.id",
                    f"has a {unsupported} {kind} space, which PPO's policies cannot use.",
                    env_id,
                    "pick an environment with Box, Discrete, MultiDiscrete or MultiBinary "
                    f"{kind}s (or a wrapper that flattens them).",
                    source,
                )
        yield env
    finally:
        env.close()


def check_env_usable(
    env_id: str,
    kwargs: Mapping[str, Any] | None = None,
    source: str | None = None,
    wrappers: Sequence[Any] = (),
) -> tuple[int, int]:
    """`usable_env`'s check alone (cheap for every env the platform trains). Returns the floats
    an observation (as the policy sees it: wrapped and frame-stacked) and an action take (for
    the resource estimate)."""
    with usable_env(env_id, kwargs, source, wrappers) as env:
        observation = observation_size_of(env.observation_space) * frame_stack_of(wrappers)
        return observation, observation_size_of(env.action_space)


def normalized_keys(space: Any) -> list[str] | None:
    """The keys of a Dict observation VecNormalize normalizes (its Box ones); None otherwise."""
    from gymnasium import spaces

    if not isinstance(space, spaces.Dict):
        return None
    return [key for key, sub in space.spaces.items() if isinstance(sub, spaces.Box)]


def refuse_unnormalizable(spec: ExperimentSpec, space: Any, source: str | None) -> None:
    """env.normalize.obs needs a Box observation, or a Dict one with a Box key."""
    if not spec.env.normalize.obs or type(space).__name__ == "Box" or normalized_keys(space):
        return
    raise _env_issue(
        "env.normalize.obs",
        f"has nothing to normalize: {spec.env.id}'s observations are {type(space).__name__}, "
        "with no Box (continuous) part.",
        True,
        "set env.normalize.obs: false (discrete observations are one-hot encoded, not scaled).",
        source,
    )


def check_spec_env(spec: ExperimentSpec, source: str | None = None) -> None:
    """`usable_env`'s check for the spec's env, gSDE only on continuous actions, then the
    resource budget with its real sizes, and that `env.vectorization` can run it."""
    wrappers = spec.env.wrappers
    with usable_env(spec.env.id, spec.env.kwargs, source, wrappers) as env:
        observation = observation_size_of(env.observation_space) * frame_stack_of(wrappers)
        action = observation_size_of(env.action_space)
        continuous = type(env.action_space).__name__ == "Box"
        refuse_unnormalizable(spec, env.observation_space, source)
    if spec.policy.use_sde and not continuous:
        raise _env_issue(
            "policy.use_sde",
            f"needs continuous (Box) actions; {spec.env.id} has discrete ones.",
            True,
            "remove policy.use_sde (gSDE perturbs a Gaussian policy's actions).",
            source,
        )
    issues = budget_refusals(spec, observation, action)
    if issues:
        raise SpecError(issues, source)
    check_vectorization(spec, source)

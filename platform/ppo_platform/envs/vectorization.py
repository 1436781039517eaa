"""`env.vectorization`: which vectorized env steps a spec's N envs, and why a choice is refused.

- `native`: gymnasium's own vector env for the id (`gymnasium.make_vec(...,
  vectorization_mode="vector_entry_point")`, CartPole's `CartPoleVectorEnv`), made same-step and
  given SB3's conventions by `envs.vector.NativeVecEnv`;
- `envpool`: EnvPool's C++ env pool (`pip install 'ppo-platform[envpool]'`), `envs.envpool_vec`;
- `dummy` / `subproc`: one gymnasium env per copy, in-process or one process each (SB3's);
- `auto`: native where the id has a native vector env and nothing in the spec stands in the way,
  EnvPool for ALE games and MuJoCo where it is installed and runs the env as the spec describes
  it, dummy otherwise (EnvPool's classic-control and toy-text envs only when asked for).

The checks build no env; gymnasium is imported inside the functions (`validate` stays light).
"""

from __future__ import annotations

import inspect
from typing import Any

from ppo_platform.envs import envpool_support
from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.wrappers import FrameStackSpec

FIELD = "env.vectorization"
PER_ENV = ("dummy", "subproc")


def native_obstacle(spec: ExperimentSpec) -> str | None:
    """Why the spec's env cannot run as a native vector env, or None if it can."""
    import gymnasium
    from gymnasium.envs.registration import load_env_creator

    from ppo_platform.envs.vector_autoreset import convertible

    env_spec = gymnasium.registry.get(spec.env.id)
    if env_spec is None or not isinstance(env_spec.vector_entry_point, str):
        return f"{spec.env.id} has no native vector env in gymnasium's registry"
    per_env = [w.name for w in spec.env.wrappers if not isinstance(w, FrameStackSpec)]
    if per_env:
        return f"the per-env wrappers {', '.join(per_env)} cannot wrap a native vector env"
    if env_spec.additional_wrappers:
        return f"{spec.env.id} is registered with wrappers a native vector env cannot take"
    try:
        creator: Any = load_env_creator(env_spec.vector_entry_point)
    except Exception as error:  # a vector env whose dependency (e.g. jax) is missing
        return f"its native vector env cannot be loaded: {type(error).__name__}: {error}"
    if not convertible(creator):
        return (
            f"its native vector env ({creator.__name__}) resets on the step after an episode "
            "ends, which SB3's rollouts cannot use"
        )
    parameters = inspect.signature(creator).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        unknown = sorted(set(spec.env.kwargs) - set(parameters) - {"render_mode"})
        if unknown:
            return f"its native vector env takes no {', '.join(unknown)} (env.kwargs)"
    return None


def resolve(spec: ExperimentSpec, own_env: bool = False) -> str:
    """The vectorization that will run: `auto` resolved, the others as given (a notebook's own
    env, `own_env`, always runs per env)."""
    mode = spec.env.vectorization
    if mode != "auto":
        return mode
    if own_env:
        return "dummy"
    if native_obstacle(spec) is None:
        return "native"
    if envpool_support.auto_picks(spec):
        return "envpool"
    return "dummy"


def vectorization_issues(spec: ExperimentSpec, own_env: bool = False) -> list[SpecIssue]:
    """Refusals of `env.vectorization` for this spec (empty if it can run as asked)."""
    mode = spec.env.vectorization
    if mode in PER_ENV or mode == "auto":
        return []
    reason: str | None
    if own_env:
        reason = "your own env (make_env) is one env, not a vector env"
    elif mode == "native":
        reason = native_obstacle(spec)
    else:
        reason = envpool_support.obstacle(spec)
    if reason is None:
        return []
    fix = "use auto (native, then EnvPool, where they fit; dummy otherwise), dummy or subproc"
    if mode == "envpool" and not envpool_support.installed():
        fix = f"pip install 'ppo-platform[envpool]', or {fix}"
    return [SpecIssue(FIELD, f"cannot be {mode}: {reason}.", mode, fix=f"{fix}.")]


def check_vectorization(
    spec: ExperimentSpec, source: str | None = None, own_env: bool = False
) -> None:
    """SpecError naming env.vectorization, its value and the fix if it cannot run as asked."""
    issues = vectorization_issues(spec, own_env)
    if issues:
        raise SpecError(issues, source)

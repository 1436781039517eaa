"""The one env factory: picklable, so subprocess vectorization and every child process build
exactly the env the parent would (env packages imported first, then make, then the wrappers)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ppo_platform.envs.apply import wrap_env
from ppo_platform.envs.packages import import_env_packages


def make_kwargs(env_id: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments for `gymnasium.make`: `render_mode` only when something renders.

    Gymnasium does not require a `render_mode` parameter, so passing `render_mode=None` to an env
    whose constructor has none fails (docs/guides/your-own-environment.md). `None` is passed only
    to override a render mode the env's registration sets itself (a window nobody watches)."""
    import gymnasium

    made = dict(kwargs)
    if made.get("render_mode") is not None:
        return made
    made.pop("render_mode", None)
    registered = gymnasium.registry.get(env_id)
    if registered is not None and registered.kwargs.get("render_mode") is not None:
        made["render_mode"] = None
    return made


@dataclass(frozen=True)
class EnvFactory:
    """`factory()` -> one env: `gymnasium.make(env_id, **kwargs)` (or `make_env()`, a notebook
    user's own function), wrapped as `wrappers` says. `packages` are imported first, so a spawned
    process that unpickles the factory can build it too."""

    env_id: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    wrappers: Sequence[Any] = ()
    packages: Sequence[str] = ()
    make_env: Callable[[], Any] | None = None
    monitor: bool = True
    action_seed: int | None = None  # SB3's make_vec_env seeds env i's action space with seed + i
    keep_frames: bool = False  # filming: each step's info carries its frame (envs/faults.py)

    def make(self) -> Any:
        """The env before the wrappers."""
        import gymnasium

        if self.make_env is not None:
            return self.make_env()
        import_env_packages(self.packages)
        with warnings.catch_warnings():  # "out of date" notices: the checks say what matters
            warnings.simplefilter("ignore")
            return gymnasium.make(
                self.env_id, disable_env_checker=True, **make_kwargs(self.env_id, self.kwargs)
            )

    def wrap(self, env: Any) -> Any:
        """`env` with this factory's wrappers (SpecError names one that does not fit)."""
        return wrap_env(env, self.wrappers, monitor=self.monitor)

    def __call__(self) -> Any:
        from ppo_platform.envs.faults import CatchEnvFaults, KeepFrames

        env = self.wrap(self.make())
        if self.keep_frames:
            env = KeepFrames(env)
        env = CatchEnvFaults(env)  # the env's own exception, kept as data
        if self.action_seed is not None:
            env.action_space.seed(self.action_seed)
        return env

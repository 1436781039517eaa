"""The compiled program of a run made ready while the process still imports torch.

A compiled run's process pays, before its first update, for importing torch and
stable-baselines3 (the SB3 model each seed is saved as) and, apart from that, for importing jax,
tracing the program and loading it from XLA's cache (trainers/compiled/cache.py). Both are
seconds, and the second is mostly C++ that runs without the GIL. `start(spec, n_seeds)`, called
by the command before it imports the trainer, prepares the program in a thread; `ready_program`
(the batch, when it starts) takes it, or builds it there when none was started or it was for
another configuration.

Importing jax draws from numpy's global random state, which the import restores afterwards
(trainers/quiet_imports.py): `ready_program` is called before any model seeds that state, so the
thread never restores it over a seed.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ppo_platform import tracing
from ppo_platform.execution.threads import usable_cpus
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec, Schedule
from ppo_platform.training.compiled_path import MAX_CHUNK, training_path

if TYPE_CHECKING:
    from ppo_platform.trainers.compiled.ppo import CompiledConfig, CompiledPPO

# XLA's compiled programs, kept under the platform home (trainers/compiled/cache.py).
COMPILE_CACHE_FOLDER = "cache/xla"

_lock = threading.Lock()
_warming: list[_Warmup] = []  # started, not yet taken


def _schedule(schedule: Schedule) -> tuple[float, float, bool]:
    return schedule.start, schedule.end, schedule.schedule == "linear"


def compiled_config(spec: ExperimentSpec) -> CompiledConfig:
    """The compiled program's hyperparameters: the spec's, as training/algorithms.py gives
    them to SB3."""
    from ppo_platform.trainers.compiled.ppo import CompiledConfig  # jax

    policy = spec.policy
    return CompiledConfig(
        env_id=spec.env.id,
        n_envs=spec.env.n_envs,
        n_steps=spec.rollout.n_steps,
        epochs=spec.update.epochs,
        minibatch_size=spec.update.minibatch_size,
        total_timesteps=spec.budget.total_timesteps,
        learning_rate=_schedule(spec.update.learning_rate),
        clip_range=_schedule(spec.surrogate.clip_epsilon),
        clip_range_vf=spec.surrogate.clip_value,
        vf_coef=spec.surrogate.value_coef,
        ent_coef=spec.surrogate.entropy_coef,
        max_grad_norm=spec.update.max_grad_norm,
        normalize_advantage=spec.surrogate.normalize_advantage,
        gamma=spec.advantage.gamma,
        gae_lambda=spec.advantage.gae_lambda,
        pi_arch=tuple(policy.net_arch),
        vf_arch=tuple(policy.value_net_arch or policy.net_arch),
        activation=policy.activation,
        ortho_init=policy.ortho_init,
        chunk=MAX_CHUNK,
    )


class _Warmup:
    """One program being made ready in a daemon thread; `take()` waits for it."""

    def __init__(self, spec: ExperimentSpec, n_seeds: int, settings: Settings) -> None:
        self.spec, self.n_seeds, self.settings = spec, n_seeds, settings
        self.threads = batch_threads(settings)
        self.program: CompiledPPO | None = None
        self.config: CompiledConfig | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="compiled-warmup", daemon=True)

    def _run(self) -> None:
        try:
            self.config = compiled_config(self.spec)
            self.program = build_program(self.config, self.n_seeds, self.threads, self.settings)
            tracing.mark("compiled: program ready (warm-up thread)")
        except BaseException as error:  # said by `take`'s caller building it again
            self.error = error

    def take(self) -> CompiledPPO | None:
        self.thread.join()
        return self.program


def batch_threads(settings: Settings) -> int:
    """The threads a batch trains on: `compiled_threads`, 0 meaning one per usable core."""
    return settings.compiled_threads or usable_cpus()


def build_program(
    config: CompiledConfig, n_seeds: int, threads: int, settings: Settings
) -> CompiledPPO:
    """`config`'s program, compiled (or loaded from the cache) for a batch of `n_seeds` on
    `threads` threads."""
    from ppo_platform.trainers.compiled.cache import use_compilation_cache  # jax
    from ppo_platform.trainers.compiled.ppo import CompiledPPO

    use_compilation_cache(settings.home / COMPILE_CACHE_FOLDER)
    program = CompiledPPO(config)
    program.prepare(n_seeds, threads)
    return program


def start(spec: ExperimentSpec, n_seeds: int, settings: Settings | None = None) -> None:
    """Prepare `spec`'s program for `n_seeds` in the background, if it trains compiled."""
    try:
        if training_path(spec)["training_path"] != "compiled":
            return
    except Exception:  # `compiled: on` it cannot run: the run itself says why
        return
    warmup = _Warmup(spec, n_seeds, settings or get_settings())
    with _lock:
        _warming.append(warmup)
    warmup.thread.start()


def ready_program(
    config: CompiledConfig, n_seeds: int, threads: int, settings: Settings
) -> CompiledPPO:
    """The program of `config` for `n_seeds` on `threads`: the one `start` prepared if it
    matches, else built now."""
    with _lock:
        started = list(_warming)
        _warming.clear()
    for warmup in started:
        program = warmup.take()
        if program is not None and warmup.config == config:
            program.prepare(n_seeds, threads)  # nothing to do when they match
            return program
    tracing.mark("compiled: building the program")
    return build_program(config, n_seeds, threads, settings)

"""A compiled run's program made ready, and training, before the process imports torch.

A compiled run's process pays, before its first update, for importing jax, tracing the program
and loading it from XLA's cache (trainers/compiled/cache.py), and for importing torch and
stable-baselines3 (the SB3 model each seed is saved as, needed only when the first chunk of
updates is fed to the sessions). Both imports are Python and share one GIL; the training is
XLA's and does not hold it. So `start(spec, seeds)`, called by the command before it imports
the trainer, prepares the program in a thread and waits until it is ready (the imports would
only slow each other), and the thread goes on to train the seeds (training/compiled_feed.py)
while the command imports torch and builds the models. `ready_feed` (the batch, when it starts)
takes that training, or starts its own when none was started or it was for another
configuration, other seeds or another chunk plan.

Importing jax draws from numpy's global random state, which the import restores afterwards
(trainers/quiet_imports.py): `start` and `ready_feed` return only once jax is imported, before
any model seeds that state, so the thread never restores it over a seed.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ppo_platform import tracing
from ppo_platform.execution.threads import usable_cpus
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec, Schedule
from ppo_platform.training.compiled_feed import ChunkFeed, ChunkPlan
from ppo_platform.training.compiled_path import MAX_CHUNK, training_path

if TYPE_CHECKING:
    from ppo_platform.trainers.compiled.ppo import CompiledConfig, CompiledPPO

# XLA's compiled programs and the traced ones, kept under the platform home
# (trainers/compiled/cache.py, exported.py).
COMPILE_CACHE_FOLDER = "cache/xla"
EXPORTED_FOLDER = "cache/exported"

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
    """One program made ready in a daemon thread, which then starts training `seeds`;
    `take()` waits until the program is ready (or failed: None, and the batch builds it
    again and says why)."""

    def __init__(self, spec: ExperimentSpec, seeds: list[int], settings: Settings) -> None:
        self.spec, self.seeds, self.settings = spec, seeds, settings
        self.threads = batch_threads(settings)
        self.plan = ChunkPlan.of(spec)
        self.program: CompiledPPO | None = None
        self.config: CompiledConfig | None = None
        self.feed: ChunkFeed | None = None
        self.thread = threading.Thread(target=self._run, name="compiled-warmup", daemon=True)

    def _run(self) -> None:
        try:
            self.config = compiled_config(self.spec)
            program = build_program(self.config, len(self.seeds), self.threads, self.settings)
            tracing.mark("compiled: program ready (warm-up thread)")
            self.feed = ChunkFeed(program, self.seeds, self.threads, self.plan).start()
            self.program = program
        except BaseException:  # said by `take`'s caller building it again
            self.program = None

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
    from ppo_platform.trainers.compiled import ONE_XLA_THREAD
    from ppo_platform.trainers.compiled.cache import use_compilation_cache  # jax
    from ppo_platform.trainers.compiled.exported import ExportStore
    from ppo_platform.trainers.compiled.ppo import CompiledPPO
    from ppo_platform.trainers.compiled.threads import create_cpu_client

    create_cpu_client(max(1, min(threads, n_seeds)), ONE_XLA_THREAD)  # one per group of seeds
    use_compilation_cache(settings.home / COMPILE_CACHE_FOLDER)
    program = CompiledPPO(config, ExportStore.at(settings.home / EXPORTED_FOLDER))
    program.prepare(n_seeds, threads)
    return program


def start(spec: ExperimentSpec, seeds: list[int], settings: Settings | None = None) -> None:
    """If `spec` trains compiled: its program for `seeds` made ready (returns then), and
    those seeds training in the background."""
    try:
        if training_path(spec)["training_path"] != "compiled":
            return
    except Exception:  # `compiled: on` it cannot run: the run itself says why
        return
    warmup = _Warmup(spec, seeds, settings or get_settings())
    with _lock:
        _warming.append(warmup)
    warmup.thread.start()
    warmup.take()


def ready_feed(
    config: CompiledConfig,
    plan: ChunkPlan,
    seeds: list[int],
    threads: int,
    settings: Settings,
) -> ChunkFeed:
    """`seeds` of `config` training on `threads` in chunks of `plan`: what `start` began if it
    matches, else its program (when the configuration matches) or a new one, started now."""
    with _lock:
        started = list(_warming)
        _warming.clear()
    program: CompiledPPO | None = None
    taken: ChunkFeed | None = None
    for warmup in started:
        found, feed = warmup.take(), warmup.feed
        if found is not None and warmup.config == config and program is None:
            program = found
            if feed is not None and feed.matches(seeds, threads, plan):
                taken = feed
                continue
        if feed is not None:  # training what no batch will take
            feed.stop()
    if taken is not None:
        return taken
    if program is None:
        tracing.mark("compiled: building the program")
        program = build_program(config, len(seeds), threads, settings)
    program.prepare(len(seeds), threads)  # nothing to do when it was built for them
    return ChunkFeed(program, seeds, threads, plan).start()

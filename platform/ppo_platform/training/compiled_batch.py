"""Seeds of one spec trained together on the compiled path (trainers/compiled), each an MLflow
run of its own, as if it had been trained alone on the torch path.

Each seed has a `TrainingSession` and an SB3 model of the spec's policy: the compiled program
hands over every update's metrics (the session's monitor, doctor and MLflow rows read them as
they read the torch trainer's) and, at the end of each chunk of updates, the weights and Adam
state, which go into the seed's SB3 model. Evaluation, checkpoints and the final model are
the torch path's, on that model: the saved agent is a plain stable-baselines3 PPO, and a
checkpoint resumes (on the torch path) with its optimiser. What differs, and is said here:
- evaluations and checkpoints fall on the first update boundary at or past their step (a
  chunk ends there), not mid-rollout as SB3's callbacks take them;
- `rollout/ep_rew_mean` averages the last 100 episodes from the mean return of the episodes
  that ended in each update (the program counts episodes per update, not one by one);
- a stop (cancel, `on_alert: stop`) takes effect at the end of the chunk.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ppo_platform import tracing
from ppo_platform.envs.build import build_eval_env, build_train_env
from ppo_platform.errors import TrainingError
from ppo_platform.execution import signals
from ppo_platform.execution.threads import pin_threads
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import (
    RemoteRun,
    member_tags,
    runs_closed_on_interrupt,
    shared_tracking_process,
)
from ppo_platform.trainers.compiled.export import load_into_policy
from ppo_platform.training.algorithms import build_model
from ppo_platform.training.compiled_feed import ChunkFeed, ChunkPlan
from ppo_platform.training.compiled_warmup import batch_threads, compiled_config, ready_feed
from ppo_platform.training.progress import ProgressEvent
from ppo_platform.training.result import RunResult
from ppo_platform.training.session import TrainingSession

if TYPE_CHECKING:
    from ppo_platform.trainers.compiled.ppo import CompiledConfig

EPISODE_WINDOW = 100  # SB3's stats_window_size: rollout/ep_rew_mean's episodes
_MUST_BE_FINITE = ("train/policy_gradient_loss", "train/value_loss", "train/approx_kl")


@dataclass
class _Seed:
    """One seed of the batch: its spec, session, SB3 model and where it stands."""

    seed: int
    spec: ExperimentSpec
    session: TrainingSession
    model: Any
    evaluator: Any
    next_eval: int
    next_checkpoint: int
    stopped: bool = False
    failure: str = ""
    episodes: deque = field(default_factory=lambda: deque(maxlen=EPISODE_WINDOW))

    def feed(self, names: Sequence[str], metrics: dict[str, np.ndarray], index: int, first: int):
        """The chunk's updates, one `on_update` each, as the torch trainer reports them."""
        batch = self.spec.batch_size
        for u in range(metrics[names[0]].shape[1]):
            row = {n: float(metrics[n][index, u]) for n in names if n.startswith("train/")}
            ended = float(metrics["rollout/episodes"][index, u])
            if ended:
                mean = {
                    "r": float(metrics["rollout/return_sum"][index, u]) / ended,
                    "l": float(metrics["rollout/length_sum"][index, u]) / ended,
                }
                self.episodes.extend([mean] * int(ended))
            self.model.num_timesteps = (first + u + 1) * batch
            self.model.ep_info_buffer = self.episodes
            bad = [n for n in _MUST_BE_FINITE if not math.isfinite(row.get(n, 0.0))]
            if bad:
                self.fail(f"non-finite {', '.join(bad)} at update {first + u + 1}")
                return
            self.model.n_updates_done = first + u + 1
            self.session.on_update(self.model, row)

    def fail(self, reason: str) -> None:
        self.failure = f"training diverged at step {self.model.num_timesteps}: {reason}"
        self.session.tracker.finish("FAILED", {tag.OUTCOME: "diverged", tag.FAILURE: reason})

    def take(self, params: Any, opt: Any) -> None:
        """The chunk end's weights into the SB3 model; evaluate and checkpoint where due."""
        load_into_policy(self.model.policy, params, opt)
        steps = self.model.num_timesteps
        every_eval = self.spec.evaluation.every_timesteps
        if every_eval and steps >= self.next_eval:
            self.next_eval += every_eval * ((steps - self.next_eval) // every_eval + 1)
            self.evaluator.num_timesteps = steps
            self.evaluator.evaluate()
        every_checkpoint = self.spec.checkpoints.every_timesteps
        if every_checkpoint and steps >= self.next_checkpoint:
            self.next_checkpoint += every_checkpoint * (
                (steps - self.next_checkpoint) // every_checkpoint + 1
            )
            self.session.save_checkpoint(steps)


@dataclass(frozen=True)
class SeedsResult:
    """Each seed's run: the results of those that ended, why the others failed, and every
    seed's run id (a failed seed's run is closed FAILED with why)."""

    results: dict[int, RunResult]
    failures: dict[int, str]
    run_ids: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchMember:
    """One seed of a batch as its own run: its spec (the batch's with its seed; a sweep's
    member also has its own name) and its run's tags."""

    seed: int
    spec: ExperimentSpec
    tags: dict[str, str]


def _open(
    member: BatchMember, stack: contextlib.ExitStack, options: dict[str, Any], alongside: bool
) -> _Seed:
    """`member`'s model, run and session; `alongside`: the batch's earlier runs are open."""
    seed, seed_spec = member.seed, member.spec
    model = build_model(seed_spec, build_train_env(seed_spec))
    tags = {**member.tags, tag.TRAINING_PATH: "compiled"}
    tracker = RemoteRun.open(
        options["process"],
        options["settings"],
        seed_spec,
        parent_run_id=options["parent"],
        tags=tags,
        alongside=alongside,
    )
    stack.enter_context(tracker)
    on_progress = options["progress_for"](seed)
    session = TrainingSession(
        seed_spec, tracker, on_progress, options["cancel"], None, options["defer_plot"]
    )
    session.path = {
        "training_path": "compiled",
        "training_path_reason": f"compiled: {seed_spec.compiled}",
    }
    evaluator = session.begin(model, build_eval_env(seed_spec))
    evaluator.init_callback(model)
    first_eval, first_checkpoint = (
        seed_spec.evaluation.every_timesteps,
        seed_spec.checkpoints.every_timesteps,
    )
    return _Seed(seed, seed_spec, session, model, evaluator, first_eval, first_checkpoint)


def run_seeds(
    spec: ExperimentSpec,
    seeds: Sequence[int],
    *,
    tags: dict[str, str] | None = None,
    **options: Any,
) -> SeedsResult:
    """Train `seeds` of `spec` together on the compiled path, one MLflow run each, named and
    tagged as a batch's seeds (`member_tags`); `options` as for `run_members`."""
    members = [BatchMember(s, spec.with_seed(s), member_tags(spec, s, tags)) for s in seeds]
    return run_members(members, **options)


def run_members(
    batch: Sequence[BatchMember],
    *,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    cancel: threading.Event | None = None,
    settings: Settings | None = None,
    parent_run_id: str | None = None,
    defer_plot: bool = False,
    progress_for: Callable[[int], Callable[[ProgressEvent], None] | None] | None = None,
    threads: int | None = None,
) -> SeedsResult:
    """Train `batch` together on the compiled path, one MLflow run each (under
    `parent_run_id`; `progress_for(seed)`: that seed's `on_progress`, else `on_progress`
    hears every seed). The members' specs may differ in name and seed only. A seed that
    diverges closes FAILED with why; the others go on. Ctrl-C and SIGTERM checkpoint every
    seed and close its run KILLED, as for one run. `threads`: how many groups of the seeds
    train in parallel (default: the `compiled_threads` setting)."""
    config = _one_config(batch)
    process = shared_tracking_process()
    settings = settings or get_settings()
    pin_threads(settings.torch_threads)
    cancel = cancel or threading.Event()
    options = {
        "process": process,
        "settings": settings,
        "parent": parent_run_id,
        "progress_for": progress_for or (lambda seed: on_progress),
        "cancel": cancel,
        # A batch's seeds close one after another: their plots are drawn while the next
        # seed is evaluated and saved, not before each close is answered.
        "defer_plot": defer_plot or len(batch) > 1,
    }
    # Training from here on (or since the command started it); before models seed numpy.
    seeds, threads = [m.seed for m in batch], threads or batch_threads(settings)
    feed = ready_feed(config, ChunkPlan.of(batch[0].spec), seeds, threads, settings)
    tracing.mark("compiled: program built")
    with runs_closed_on_interrupt(), contextlib.ExitStack() as stack:
        stack.callback(feed.close)  # however the batch ends, its training thread ends first
        members = [_open(member, stack, options, i > 0) for i, member in enumerate(batch)]
        tracing.mark("compiled: runs opened, models built")
        mark = signals.received()
        try:
            _take_chunks(feed, _on_chunk(members, cancel))
            tracing.mark("compiled: training done")
        except KeyboardInterrupt:
            _checkpoint_interrupted(members)
            raise
        except Exception as error:
            # Raised while torch wrote a checkpoint, an interrupt comes out as a RuntimeError.
            interrupt = signals.interrupt_since(mark)
            if interrupt is None:
                raise
            _checkpoint_interrupted(members)
            raise interrupt from error
        finally:
            for member in members:
                member.model.env.close()
        results = {m.seed: m.session.finish(m.model, m.evaluator) for m in members if not m.failure}
    failures = {m.seed: m.failure for m in members if m.failure}
    return SeedsResult(results, failures, {m.seed: m.session.tracker.run_id for m in members})


def _one_config(batch: Sequence[BatchMember]) -> CompiledConfig:
    config, plan = compiled_config(batch[0].spec), ChunkPlan.of(batch[0].spec)
    other = [
        m.seed for m in batch if compiled_config(m.spec) != config or ChunkPlan.of(m.spec) != plan
    ]
    if other or len({m.seed for m in batch}) != len(batch):
        raise ValueError(f"a compiled batch trains one configuration on distinct seeds: {other}")
    return config


def _checkpoint_interrupted(members: list[_Seed]) -> None:
    """Each seed still training checkpointed where it stands, for its resume."""
    for member in members:
        if not member.failure:
            member.session._checkpoint_interrupted(member.model)


def _on_chunk(members: list[_Seed], cancel: threading.Event) -> Callable[..., bool]:
    def on_chunk(first: int, metrics: dict[str, np.ndarray], state: dict[str, Any]) -> bool:
        tracing.mark(f"compiled: chunk from update {first} trained")
        names = list(metrics)
        params = jax_to_numpy(state["params"])
        opt = jax_to_numpy(state["opt"])
        for index, member in enumerate(members):
            if member.stopped or member.failure:
                continue
            member.feed(names, metrics, index, first)
            if member.failure:
                continue
            member.take(_seed_of(params, index), _seed_of(opt, index))
            member.stopped = member.session._stop_requested()
        tracing.mark(f"compiled: chunk from update {first} fed to the sessions")
        return cancel.is_set() or all(m.stopped or m.failure for m in members)

    return on_chunk


def _take_chunks(feed: ChunkFeed, on_chunk: Callable[..., bool]) -> None:
    """Each trained chunk to `on_chunk` in order, until it says stop or the training ends."""
    for first, metrics, state in feed.chunks():
        if on_chunk(first, metrics, state):
            feed.stop()
            return


def jax_to_numpy(tree: Any) -> Any:
    import jax

    return jax.tree_util.tree_map(np.asarray, tree)


def _seed_of(tree: Any, index: int) -> Any:
    import jax

    return jax.tree_util.tree_map(lambda x: x[index], tree)


def run_one(
    spec: ExperimentSpec, *, tags: dict[str, str] | None = None, **options: Any
) -> RunResult:
    """One seed (`budget.seed`) on the compiled path, as `run_spec` trains one on torch's: its
    own run with its own name and `tags` (a sweep member's stay its own); a diverged run
    raises TrainingError."""
    seed = spec.budget.seed
    done = run_members([BatchMember(seed, spec, dict(tags or {}))], **options)
    if done.failures:
        raise TrainingError(f"{done.failures[seed]}. Lower the learning rate or K.")
    return done.results[seed]

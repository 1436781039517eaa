"""`evaluation.async: true`: evaluations in a separate process, on snapshots of the weights.

At each evaluation point the training process saves a snapshot (the model's weights, and the
observation statistics when observations are normalized) and goes on training; the evaluation
process (`training/eval_worker.py`) evaluates it and answers with the snapshot's env step. The
training process reports the answers at its next update (`collect`), and waits for the last
ones before it closes the run (`collect(wait=True)`).
"""

from __future__ import annotations

import pickle
import queue
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from ppo_platform.envs.shipping import encode_factory
from ppo_platform.errors import TrainingError
from ppo_platform.execution.child import JsonLinesChild
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.trainers.callbacks import PeriodicEvalCallback

# The first line's key for a notebook user's env factory (cloudpickled, base64).
MAKE_ENV_KEY = "__make_env__"


class EvalProcess:
    """The evaluation process, fed snapshots; its answers are queued by the reader thread."""

    def __init__(self, spec: ExperimentSpec, make_env: Callable[[], Any] | None = None) -> None:
        first = spec.resolved()
        if make_env is not None:  # checked before the process starts
            first[MAKE_ENV_KEY] = encode_factory(make_env, "evaluation.async")
        self.answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.outstanding = 0
        self._end = ""
        module, who = "ppo_platform.training.eval_worker", "the evaluation process"
        self.child = JsonLinesChild(module, who, self.answers.put, self._ended)
        self.process = self.child.process
        self._send(first)

    def _ended(self, reason: str) -> None:
        self._end = reason
        self.answers.put(None)  # end of answers: the process is gone

    def _send(self, message: dict[str, Any]) -> None:
        if not self.child.send(message):
            self.process.wait()
            raise TrainingError(self._death())

    def _death(self) -> str:
        return self._end or f"the evaluation process exited ({self.process.poll()})"

    def submit(self, step: int, model: Path, normalize: Path | None) -> None:
        self._send({"step": step, "model": str(model), "normalize": str(normalize or "")})
        self.outstanding += 1

    def next_answer(self, wait: bool) -> dict[str, Any] | None:
        """The next answer (None if none is ready and not `wait`); raises if it failed."""
        if not self.outstanding:
            return None
        try:
            answer = self.answers.get(block=wait)
        except queue.Empty:
            return None
        if answer is None:
            raise TrainingError(self._death())
        self.outstanding -= 1
        if "error" in answer:
            raise TrainingError(f"evaluation at step {answer['step']} failed: {answer['error']}")
        return answer

    def close(self, timeout: float = 10.0) -> None:
        """End its input and wait for it to exit (killed if it does not within `timeout`)."""
        self.child.close(timeout)


class AsyncEvalCallback(PeriodicEvalCallback):
    """PeriodicEvalCallback whose evaluations run in an `EvalProcess` on weight snapshots."""

    def __init__(
        self,
        spec: ExperimentSpec,
        eval_env: VecEnv,
        on_eval: Callable[[int, float, float], None],
        seed: int | None,
        make_env: Callable[[], Any] | None = None,
    ) -> None:
        e = spec.evaluation
        super().__init__(eval_env, e.every_timesteps, e.episodes, e.deterministic, on_eval, seed)
        self.worker = EvalProcess(spec, make_env)
        self.snapshots = Path(tempfile.mkdtemp(prefix="ppo-eval-snapshots-"))

    def evaluate(self) -> tuple[float, float]:
        """Snapshot the weights now and hand them over; the answer comes with `collect`."""
        step = self.num_timesteps
        model_path = self.snapshots / f"model_{step}.zip"
        self.model.save(model_path, exclude=["env", "ep_info_buffer", "ep_success_buffer"])
        normalize = None
        train_env = self.model.get_env()
        if isinstance(train_env, VecNormalize):
            normalize = self.snapshots / f"obs_rms_{step}.pkl"
            normalize.write_bytes(pickle.dumps(train_env.obs_rms))
        self.worker.submit(step, model_path, normalize)
        self.last_eval_step = step
        return float("nan"), float("nan")

    def collect(self, wait: bool = False) -> None:
        """Report the answers that are in (all outstanding ones if `wait`), in step order."""
        while (answer := self.worker.next_answer(wait)) is not None:
            self.on_eval(answer["step"], answer["mean"], answer["std"])

    def close(self, timeout: float = 10.0) -> None:
        self.worker.close(timeout)
        for path in self.snapshots.glob("*"):
            path.unlink(missing_ok=True)
        self.snapshots.rmdir()


def make_evaluator(
    spec: ExperimentSpec,
    eval_env: VecEnv,
    on_eval: Callable[[int, float, float], None],
    seed: int | None,
    make_env: Callable[[], Any] | None = None,
) -> PeriodicEvalCallback:
    """The spec's periodic evaluation: in this process, or asynchronously (`evaluation.async`;
    a notebook user's `make_env` is shipped to the evaluation process, or refused clearly)."""
    if spec.evaluation.run_async:
        return AsyncEvalCallback(spec, eval_env, on_eval, seed, make_env)
    e = spec.evaluation
    return PeriodicEvalCallback(
        eval_env, e.every_timesteps, e.episodes, e.deterministic, on_eval, seed
    )


def collect(evaluator: PeriodicEvalCallback | None, wait: bool = False) -> None:
    """Report the asynchronous evaluations that are in (no-op for in-process evaluation)."""
    if isinstance(evaluator, AsyncEvalCallback):
        evaluator.collect(wait)


def close(evaluator: PeriodicEvalCallback | None, wait: bool = True) -> None:
    """End the evaluation process; without `wait` (a cancelled run) it is not given time to
    finish the snapshots still queued: they are dropped."""
    if isinstance(evaluator, AsyncEvalCallback):
        evaluator.close(timeout=10.0 if wait else 0.0)

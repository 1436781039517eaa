"""The asynchronous evaluation process (`evaluation.async: true`).

`python -m ppo_platform.training.eval_worker` reads the resolved spec (one JSON line), builds
the same evaluation env as the training process would, then answers each snapshot request
(`{"step", "model", "normalize"}`) with `{"step", "mean", "std"}`: the same
`evaluate_episodes` call, on the same seeds, as the in-process evaluation, so the results are
equal for the same snapshot. The snapshot files are deleted once evaluated.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from typing import IO, Any

import numpy as np

from ppo_platform.envs.build import build_eval_env, eval_seed
from ppo_platform.envs.shipping import decode_factory
from ppo_platform.execution.child import answer_stream
from ppo_platform.execution.threads import pin_threads
from ppo_platform.spec.loader import validate_data
from ppo_platform.trainers.evaluation import evaluate_episodes
from ppo_platform.training.algorithms import load_model
from ppo_platform.training.async_eval import MAKE_ENV_KEY


def evaluate_snapshot(spec: Any, env: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Evaluate one snapshot: weights from `model`, observation statistics from `normalize`."""
    if request["normalize"]:
        with open(request["normalize"], "rb") as handle:
            env.obs_rms = pickle.load(handle)
    model = load_model(spec, request["model"], env)
    rewards = evaluate_episodes(
        model, env, spec.evaluation.episodes, spec.evaluation.deterministic, eval_seed(spec)
    )
    for path in (request["model"], request["normalize"]):
        if path:
            Path(path).unlink(missing_ok=True)
    return {"step": request["step"], "mean": float(np.mean(rewards)), "std": float(np.std(rewards))}


def serve(requests: IO[str], replies: IO[str]) -> None:
    """First line: the resolved spec (with a notebook user's env factory, if any, from the
    training process); then one answer per snapshot until end of input."""
    pin_threads(1)
    first = json.loads(requests.readline())
    encoded = first.pop(MAKE_ENV_KEY, None)
    spec = validate_data(first)
    env = build_eval_env(spec, decode_factory(encoded) if encoded else None)
    for line in requests:
        request = json.loads(line)
        try:
            reply = evaluate_snapshot(spec, env, request)
        except Exception as error:  # answered: the training process raises it
            reply = {"step": request["step"], "error": f"{type(error).__name__}: {error}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main() -> None:
    """Answers go on the stdout this process was given; anything an env or library prints there
    goes to stderr instead of corrupting the answers."""
    serve(sys.stdin, answer_stream())


if __name__ == "__main__":
    main()

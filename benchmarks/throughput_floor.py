"""The arithmetic floor of cleanrl_ab.py's throughput row: the kernels a 1M-step run cannot skip.

Builds the throughput row's model (specs/cartpole.yaml, 64 envs x 32 steps, K 4, 4 minibatches
of 512) with the platform's own `build_model` and times, one thread, in one process, the pieces
of work a run repeats, each as the minimum over `--repeats` rounds (the least-disturbed figure
on a shared machine): the env step of 64 CartPoles (gymnasium's CartPoleVectorEnv, EnvPool's),
the rollout forward on 64 observations, a minibatch's loss and gradients on 512 (`ManualLoss`),
its clip + Adam step, the post-update KL over 2048, and within those the tanh layers alone.
Multiplied by how often a 1M-step run does each, their sum is what `learn` costs with no
Python overhead at all, beside the 1M budget of the 3x target.

    python benchmarks/throughput_floor.py --repeats 30
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "platform"), str(ROOT)]

STEPS, N_ENVS, N_STEPS, EPOCHS, MINIBATCH = 1_000_000, 64, 32, 4, 512
UPDATES = STEPS // (N_ENVS * N_STEPS)


def fastest(call: Callable[[], object], inner: int, repeats: int) -> float:
    """Seconds per call: the minimum over `repeats` rounds of `inner` calls."""
    call()
    best = float("inf")
    for _ in range(repeats):
        started = time.thread_time()
        for _ in range(inner):
            call()
        best = min(best, (time.thread_time() - started) / inner)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    import gymnasium
    import numpy as np
    import torch

    from ppo_platform.spec.loader import load_spec
    from ppo_platform.training.algorithms import build_model
    from ppo_platform.training.native_envs import native_vec_env
    from trainers.fast.manual import ManualLoss
    from trainers.fast.optimizer_step import MinibatchStep

    torch.set_num_threads(1)
    sets = [f"env.n_envs={N_ENVS}", f"update.epochs={EPOCHS}", f"update.minibatch_size={MINIBATCH}"]
    spec = load_spec(ROOT / "specs" / "cartpole.yaml", sets)
    env = native_vec_env(spec, N_ENVS)
    model = build_model(spec, env)
    manual = ManualLoss.build(model.policy)
    assert manual is not None
    step = MinibatchStep(model.policy.optimizer, list(model.policy.parameters()))
    rng = np.random.default_rng(0)
    vector = gymnasium.make_vec("CartPole-v1", N_ENVS, vectorization_mode="vector_entry_point")
    vector.reset(seed=0)
    actions = rng.integers(0, 2, N_ENVS)
    obs64 = torch.randn(N_ENVS, 4)
    obs, acts = torch.randn(MINIBATCH, 4), torch.randint(0, 2, (MINIBATCH, 1)).float()
    old, adv = torch.randn(MINIBATCH) * 0.1 - 0.7, torch.randn(MINIBATCH)
    old_values, returns = torch.randn(MINIBATCH), torch.randn(MINIBATCH)
    whole, whole_actions = torch.randn(N_ENVS * N_STEPS, 4), torch.randint(0, 2, (2048, 1))

    def loss() -> object:
        return manual(obs, acts, old, adv, old_values, returns, (0.2, 0.0, 0.5, None))

    grads = loss().grads  # type: ignore[attr-defined]
    step.with_grads(grads, 0.5)  # the first step creates Adam's state
    hidden, hidden64 = torch.randn(MINIBATCH, 64), torch.randn(N_ENVS, 64)
    rows: list[tuple[str, float, int]] = []

    def row(label: str, call: Callable[[], object], count: int, inner: int = 20) -> None:
        rows.append((label, fastest(call, inner, args.repeats), count))

    row("env step, CartPoleVectorEnv x64", lambda: vector.step(actions), STEPS // N_ENVS, 50)
    try:
        import envpool

        pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=N_ENVS, seed=0)
        pool.reset()
        row("env step, EnvPool CartPole x64", lambda: pool.step(actions), STEPS // N_ENVS, 50)
    except ImportError:
        pass
    with torch.inference_mode():
        row("rollout forward on 64 (manual)", lambda: manual.forward(obs64), STEPS // N_ENVS, 50)
    minibatches = UPDATES * EPOCHS * (N_ENVS * N_STEPS // MINIBATCH)
    row("minibatch loss + gradients on 512 (manual)", loss, minibatches)
    row("clip + Adam step", lambda: step.with_grads(grads, 0.5), minibatches)
    row("post-update KL on 2048", lambda: manual.log_prob(whole, whole_actions), UPDATES, 5)
    print(f"one thread; min of {args.repeats} rounds; counts for {STEPS} env steps "
          f"({UPDATES} updates, {minibatches} minibatches)")  # fmt: skip
    total = 0.0
    for label, seconds, count in rows:
        print(f"{label:44} {seconds * 1e6:9.1f} us x {count:6d} = {seconds * count:6.2f} s")
        total += seconds * count if "EnvPool" not in label else 0.0
    print(f"{'sum (CartPoleVectorEnv)':44} {total:38.2f} s")

    def four_layers(activation: Callable[[torch.Tensor], object]) -> float:
        """Seconds per run of 4 activations per minibatch (512 rows) and per rollout step (64)."""
        update = fastest(lambda: activation(hidden), 20, args.repeats) * minibatches
        rollout = fastest(lambda: activation(hidden64), 50, args.repeats) * (STEPS // N_ENVS)
        return 4 * (update + rollout)

    tanh_cost = four_layers(torch.tanh)
    fast = four_layers(lambda x: torch.sigmoid(x * 2) * 2 - 1)
    print(f"  of which torch.tanh (update + rollout)      {tanh_cost:36.2f} s")
    print(f"  the same as 2 * sigmoid(2x) - 1 (~1 ulp)    {fast:36.2f} s")
    print(f"1-min load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

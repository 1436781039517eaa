"""How near the compiled program runs to what one core can do: the update epochs' arithmetic.

The compiled path's program (trainers/compiled) on specs/cartpole.yaml's hyperparameters, in
this process, compiled before the clock starts: a batch of N seeds trained with K update
epochs and with one, so that the difference is K - 1 epochs of the update alone (the
rollouts, GAE and per-update metrics cancel). Each epoch is one minibatch of the whole
256-sample rollout through both MLPs forward and backward and an Adam step; its arithmetic is
counted from the layer sizes (a multiply-add is 2 FLOP, the backward pass twice the forward),
so the achieved rate is FLOP per CPU second of those epochs (every thread of the process:
per core), beside the rate XLA reaches for one large matmul (1024 x 1024 float32, the
reference), counted the same way, on XLA's CPU client as a one-group compiled run makes it (one
pool thread). Alternating rounds, medians with min and max. Results go to
benchmarks/results/compiled_floor.{md,json}.

    python -m benchmarks.throughput.compiled_floor                  # seeds 1 and 8, 3 rounds
    python -m benchmarks.throughput.compiled_floor --steps 4096 --rounds 1 --out /tmp/floor
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import statistics
import time
from typing import Any

from benchmarks.harness import command_line, header, load1, machine, versions, write_results

OBSERVATIONS, ACTIONS, HIDDEN = 4, 2, (64, 64)  # CartPole-v1, SB3's MlpPolicy


def mlp_macs(sizes: tuple[int, ...]) -> int:
    return sum(a * b for a, b in itertools.pairwise(sizes))


def flop_per_sample() -> int:
    """Forward and backward through the policy and value MLPs: 3 x the forward's 2 x MACs."""
    forward = mlp_macs((OBSERVATIONS, *HIDDEN, ACTIONS)) + mlp_macs((OBSERVATIONS, *HIDDEN, 1))
    return 3 * 2 * forward


def config(steps: int, epochs: int) -> Any:
    from ppo_platform.trainers.compiled.ppo import CompiledConfig

    return CompiledConfig(
        "CartPole-v1",
        8,
        32,
        epochs,
        256,
        steps,
        (1e-3, 0.0, True),
        (0.2, 0.0, True),
        gamma=0.98,
        gae_lambda=0.8,
    )


def train_seconds(steps: int, epochs: int, seeds: int) -> float:
    """CPU seconds (this process's, every thread) of `CompiledPPO.train` for `seeds` seeds,
    compiled beforehand: per CPU second is per core, whatever threads XLA used."""
    from ppo_platform.trainers.compiled.ppo import CompiledPPO

    program = CompiledPPO(config(steps, epochs))
    program.prepare(seeds, 1)
    started = time.process_time()
    program.train(list(range(seeds)), threads=1)
    return time.process_time() - started


def one_pool_thread() -> None:
    """XLA's CPU client as a one-group compiled run makes it: one pool thread."""
    compiled = importlib.import_module("ppo_platform.trainers.compiled")  # before jax
    from ppo_platform.trainers.compiled.threads import create_cpu_client

    create_cpu_client(1, compiled.ONE_XLA_THREAD)


def matmul_gflops(size: int = 1024, repeats: int = 20) -> float:
    """XLA's rate for a large float32 matmul per CPU second, on the same client: what a core
    does at best."""
    one_pool_thread()
    import jax
    import jax.numpy as jnp

    a = jnp.ones((size, size), jnp.float32)
    product = jax.jit(lambda x: x @ x)
    product(a).block_until_ready()
    started = time.process_time()
    for _ in range(repeats):
        product(a).block_until_ready()
    return 2 * size**3 * repeats / (time.process_time() - started) / 1e9


def measure(steps: int, epochs: int, seeds_list: list[int], rounds: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {}
    reference = [matmul_gflops() for _ in range(rounds)]
    cases = [(n, k) for n in seeds_list for k in (1, epochs)]
    for index in range(rounds):
        for n, k in cases if index % 2 == 0 else list(reversed(cases)):
            samples.setdefault(f"{n}x{k}", []).append(train_seconds(steps, k, n))
    updates = config(steps, epochs).n_updates
    flop_epoch = flop_per_sample() * 256  # one minibatch of the whole rollout
    rows = []
    for n in seeds_list:
        one, many = samples[f"{n}x1"], samples[f"{n}x{epochs}"]
        extra = [b - a for a, b in zip(one, many, strict=True)]  # same round, K - 1 epochs more
        epoch_s = [x / (updates * (epochs - 1) * n) for x in extra]  # per epoch, per seed
        rows.append(
            {
                "seeds": n,
                "train_cpu_s_k1": one,
                f"train_cpu_s_k{epochs}": many,
                "epoch_ms_per_seed": [1e3 * x for x in epoch_s],
                "gflops_per_core": [flop_epoch / x / 1e9 for x in epoch_s],
            }
        )
    return {
        "steps": steps,
        "epochs": epochs,
        "updates": updates,
        "rounds": rounds,
        "flop_per_sample": flop_per_sample(),
        "matmul_gflops": reference,
        "rows": rows,
    }


def _cell(values: list[float], digits: int = 2) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def render(result: dict[str, Any]) -> str:
    k = result["epochs"]
    lines = [
        *header("How near the compiled program runs to one core's arithmetic", result),
        "",
        f"1-min load {result['load1_before']:.2f} before, {result['load1']:.2f} after; one XLA"
        " thread, this process alone.",
        "",
        f"CartPole-v1, {result['steps']} env steps ({result['updates']} updates of 8 envs x 32"
        f" steps), K {k} against K 1, one minibatch of 256 per epoch; {result['rounds']} rounds"
        f" alternating; medians (min-max). An epoch of one seed is {result['flop_per_sample']:,}"
        " FLOP per sample x 256 samples (both MLPs forward and backward).",
        "",
        f"| seeds in the batch | train, K 1, CPU s | train, K {k}, CPU s | one epoch of one seed,"
        " CPU ms | achieved, GFLOP per CPU second |",
        "|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['seeds']} | {_cell(row['train_cpu_s_k1'])} |"
            f" {_cell(row[f'train_cpu_s_k{k}'])} | {_cell(row['epoch_ms_per_seed'], 3)} |"
            f" {_cell(row['gflops_per_core'], 1)} |"
        )
    lines += [
        "",
        f"Reference: a 1024 x 1024 float32 matmul in XLA, {_cell(result['matmul_gflops'], 1)}"
        " GFLOP per CPU second.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--epochs", type=int, default=20, help="K against K 1")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="compiled_floor", help="results file stem or path")
    args = parser.parse_args(argv)
    if args.steps < 256 or args.epochs < 2 or args.rounds < 1 or min(args.seeds) < 1:
        parser.error(
            f"needs --steps >= 256, --epochs >= 2, --rounds >= 1 and --seeds >= 1; given"
            f" --steps {args.steps} --epochs {args.epochs} --rounds {args.rounds}"
            f" --seeds {' '.join(map(str, args.seeds))}"
        )
    started_at, before = machine(), load1()
    result = measure(args.steps, args.epochs, args.seeds, args.rounds)
    result.update(
        machine=started_at,
        versions=versions(),
        command=command_line("benchmarks.throughput.compiled_floor"),
        load1_before=before,
        load1=load1(),
    )
    write_results(result, args.out, render)  # a path is written there, a stem to results/


if __name__ == "__main__":
    main()

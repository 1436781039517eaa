"""Tokens per second of a GRPO update step against a PPO (value head) update step, on the
demo model and spec (`specs/lm_arithmetic.yaml`, 128 responses per update both ways).

    PYTHONPATH=platform:. python -m benchmarks.throughput.lm_grpo_step [--pairs 4] [--steps 8]

Builds the demo once (`init_demo`, nothing downloaded) in a temporary home, then alternates
whole processes, PPO GRPO GRPO PPO ... (after one untimed warm-up process each); each builds
the trainer from the spec (PPO: `advantage.estimator: gae`, 128 prompts x 1 response; GRPO:
`grpo`, 16 prompts x 8 responses), takes one untimed step, then `--steps` steps, timing the
rollout and the update apart (CPU seconds of the process: one torch thread; wall beside it).
Update tokens = response tokens x epochs. The PPO process also times the value head's own
forward and backward (its linear layer and the clipped value loss, on hidden states of the
rollout's shape), the part of the PPO step a GRPO step has no use for. Writes
benchmarks/results/lm_grpo_step.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    alternate,
    cell,
    command_line,
    load_averages,
    machine,
    run_process,
    summarize,
    write_results,
)

SPEC = Path(__file__).resolve().parents[2] / "specs" / "lm_arithmetic.yaml"
VARIANTS = {
    "ppo": ["advantage.estimator=gae", "advantage.group_size=1", "lm.prompts_per_update=128"],
    "grpo": ["advantage.estimator=grpo", "advantage.group_size=8", "lm.prompts_per_update=16"],
}
KEYS = ("update_tokens_per_cpu_s", "update_cpu_s", "update_wall_s", "rollout_cpu_s", "wall_s")


def _value_head_cpu_s(trainer: Any, batch: Any, rounds: int = 20) -> float:
    """CPU seconds of the value head's forward, clipped value loss and backward, per update
    (every minibatch of every epoch), on hidden states shaped like the rollout's."""
    import torch

    head = trainer.policy.value_head
    width = trainer.policy.config.n_embd
    hidden = torch.randn(*batch.action_mask.shape, width)
    mask, returns = batch.action_mask, torch.randn(batch.action_mask.shape)
    started = time.process_time()
    for _ in range(rounds):
        values = head(hidden).squeeze(-1)
        clipped = returns + (values - returns).clamp(-0.2, 0.2)
        loss = torch.maximum((values - returns) ** 2, (clipped - returns) ** 2)[mask].mean()
        loss.backward()
    per_pass = (time.process_time() - started) / rounds  # one pass over the whole batch
    return per_pass * trainer.settings.epochs  # each epoch passes over every response once


def one(variant: str, steps: int) -> dict[str, float]:
    """One sample, in this process: `steps` timed rollouts and updates of `variant`."""
    import torch

    torch.set_num_threads(1)
    from ppo_platform.settings import get_settings
    from ppo_platform.spec.workloads import load_any_spec
    from ppo_platform.training.lm_build import build_trainer, load_prompts

    settings = get_settings()
    spec = load_any_spec(SPEC, VARIANTS[variant])
    trainer = build_trainer(spec, settings)
    prompts = load_prompts(spec.lm.prompts, "lm.prompts", settings)
    trainer.update(trainer.collect(trainer.sample_prompts(prompts)))  # untimed
    rollout_cpu = update_cpu = update_wall = 0.0
    tokens = 0
    for _ in range(steps):
        chosen = trainer.sample_prompts(prompts)
        started = time.process_time()
        batch = trainer.collect(chosen)
        rollout_cpu += time.process_time() - started
        tokens += int(batch.action_mask.sum()) * trainer.settings.epochs
        wall, started = time.perf_counter(), time.process_time()
        trainer.update(batch)
        update_cpu += time.process_time() - started
        update_wall += time.perf_counter() - wall
    row = {
        "responses_per_update": float(batch.size),
        "update_tokens_per_cpu_s": tokens / update_cpu,
        "update_cpu_s": update_cpu / steps,
        "update_wall_s": update_wall / steps,
        "rollout_cpu_s": rollout_cpu / steps,
    }
    if trainer.policy.value_head is not None:
        row["value_head_cpu_s"] = _value_head_cpu_s(trainer, batch)
    return row


def sample(variant: str, steps: int, env: dict[str, str]) -> dict[str, Any]:
    """One whole process of `variant`: its row, with the process's wall and CPU."""
    command = [sys.executable, "-m", "benchmarks.throughput.lm_grpo_step"]
    command += ["--one", variant, "--steps", str(steps)]
    done = run_process(command, env=env, keep_stdout=True)
    row = json.loads(done["stdout"].strip().splitlines()[-1])
    return {**row, "wall_s": done["wall_s"], "cpu_s": done["cpu_s"]}


def render(result: dict[str, Any]) -> str:
    stats, verdict = result["stats"], result["verdict"]
    lines = [
        "# GRPO update step against the PPO (value head) update step",
        "",
        f"Command: `{result['command']}`. Whole processes, alternating "
        f"({result['pairs']} pairs after one warm-up each), one torch thread each; each "
        f"process times {result['steps']} rollouts and updates after one untimed step. "
        f"{result['machine']['cores']} shared CPU cores; load average (1, 5, 15 min) "
        f"{result['load_before']} before, {result['load_after']} after.",
        "",
        "The demo model and spec (`specs/lm_arithmetic.yaml`: K 4, minibatches of 16, "
        "128 responses per update); PPO: 128 prompts x 1 response with the value head; GRPO: "
        "16 prompts x 8 responses, no value head. Medians (min-max) over the processes.",
        "",
        "| variant | update tokens / CPU s | update CPU s | update wall s | rollout CPU s "
        "| process wall s |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in stats.items():
        lines.append(
            f"| {name} | {cell(s['update_tokens_per_cpu_s'], 0)} | {cell(s['update_cpu_s'], 3)} "
            f"| {cell(s['update_wall_s'], 3)} | {cell(s['rollout_cpu_s'], 3)} "
            f"| {cell(s['wall_s'], 1)} |"
        )
    lines += [
        "",
        "Value head's own forward, clipped loss and backward, per PPO update (K passes over "
        f"the batch, in the PPO processes): {cell(result['value_head_cpu_s'], 4)} CPU s.",
        "",
        f"Target: GRPO update CPU s <= PPO update CPU s - value head CPU s, medians: "
        f"{verdict['grpo']:.3f} <= {verdict['ppo']:.3f} - {verdict['value_head']:.4f} = "
        f"{verdict['bound']:.3f}: **{verdict['holds']}**. {verdict['note']}",
    ]
    return "\n".join(lines) + "\n"


def _verdict(stats: dict[str, Any], head: dict[str, float]) -> dict[str, Any]:
    """The target, on medians; and whether the samples' ranges can tell the two apart."""
    grpo, ppo = stats["grpo"]["update_cpu_s"], stats["ppo"]["update_cpu_s"]
    bound = ppo["median"] - head["median"]
    low, high = ppo["min"] - head["median"], ppo["max"] - head["median"]
    overlap = grpo["min"] <= high and grpo["max"] >= low
    note = (
        "The GRPO range and the PPO range less the value head overlap: beyond the medians "
        "the samples cannot tell the two apart."
        if overlap
        else "The ranges do not overlap."
    )
    return {
        "grpo": grpo["median"],
        "ppo": ppo["median"],
        "value_head": head["median"],
        "bound": bound,
        "holds": "holds" if grpo["median"] <= bound else "does not hold",
        "note": note,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4, help="timed processes per variant")
    parser.add_argument("--steps", type=int, default=8, help="timed updates per process")
    parser.add_argument("--one", choices=tuple(VARIANTS), help="(internal) one sample here")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.steps)))
        return
    from ppo_platform.settings import Settings
    from ppo_platform.training.lm_demo import init_demo

    with tempfile.TemporaryDirectory(prefix="lm_grpo_step_") as home:
        init_demo(Settings(home=Path(home)))
        env = {**os.environ, "PPO_PLATFORM_HOME": home, "HF_HUB_OFFLINE": "1"}
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        before = load_averages()
        raw = alternate(
            {name: (lambda _i, n=name: sample(n, args.steps, env)) for name in VARIANTS},
            args.pairs,
        )
    stats = {name: summarize(samples, KEYS) for name, samples in raw.items()}
    head = summarize(raw["ppo"], ["value_head_cpu_s"])["value_head_cpu_s"]
    result = {
        "command": command_line("benchmarks.throughput.lm_grpo_step"),
        "machine": machine(),
        "pairs": args.pairs,
        "steps": args.steps,
        "load_before": [round(x, 2) for x in before],
        "load_after": [round(x, 2) for x in load_averages()],
        "samples": raw,
        "stats": stats,
        "value_head_cpu_s": head,
        "verdict": _verdict(stats, head),
    }
    write_results(result, "lm_grpo_step", render)


if __name__ == "__main__":
    main()

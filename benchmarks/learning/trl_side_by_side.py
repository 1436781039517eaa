"""ppo-platform's `ppo_lm` vs TRL's PPOTrainer on the language-model demo, side by side.

Same model (the `lm init-demo` SFT model: a 2-layer character-level GPT-2), same training
prompts, same reward (exact_answer: 1 when the response is the sum of the prompt's two
numbers), same rollout size (128 prompts per update), K=4 epochs of 16-response minibatches,
LR 1e-4 constant, clip 0.2, value clip 0.2, value coefficient 0.5, gamma = lambda = 1,
max 4 new tokens at temperature 1, a k1 KL penalty to the SFT weights starting at beta 0.05.
Differences TRL imposes: its KL coefficient is fixed (the spec's adapts toward lm/kl_ref 2),
its value function is a separate copy of the SFT model (the platform's is a head on the
policy's trunk), and its reward must be a model: `ArithmeticReward` below is a small
nn.Module with the interface TRL calls (`base_model_prefix`, a backbone returning hidden
states, `score`) that decodes the prompt + response and computes the same exact-answer reward
(no learned weights).

TRL runs in its own venv (never a project dependency): `make bench-trl-venv` builds
benchmarks/.venv-trl with torch 2.13.0 (CPU), transformers 5.24.0 and trl 1.12.0, the last
release with trl/experimental/ppo. Then, from the project's venv:

    nice -n 10 .venv/bin/python -m benchmarks.learning.trl_side_by_side --updates 200

runs the platform, then TRL (one after the other; `--parallel`: both at once, each process's
own CPU time measured), and writes
benchmarks/results/trl_side_by_side.{json,md}: mean training reward per update (the rollouts'
share of correct sums), greedy held-out accuracy of each final policy (200 held-out prompts,
the same function for both), wall and CPU seconds, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

# The harness needs the standard library only: the TRL worker imports it in TRL's venv too.
from benchmarks.harness import (
    ROOT,
    Launched,
    command_line,
    load_averages,
    machine,
    measured,
    write_results,
)

REPO = ROOT
MODULE = "benchmarks.learning.trl_side_by_side"
TRL_PYTHON = REPO / "benchmarks" / ".venv-trl" / "bin" / "python"
PROMPTS_PER_UPDATE, MINIBATCH, EPOCHS, MAX_NEW_TOKENS = 128, 16, 4, 4


# --- TRL side: runs in benchmarks/.venv-trl (imports trl, transformers, torch only) -------------


def arithmetic_reward(text: str) -> float:
    """exact_answer on the demo's prompts: 'a+b=' followed by the sum scores 1, else 0."""
    prompt, _, response = text.partition("=")
    left, _, right = prompt.partition("+")
    try:
        return 1.0 if response.strip() == str(int(left) + int(right)) else 0.0
    except ValueError:
        return 0.0


def reward_model(tokenizer: Any) -> Any:
    """The reward as the sequence-classification interface TRL's get_reward calls."""
    import torch
    from torch import nn

    class Backbone(nn.Module):
        def forward(self, input_ids: Any, attention_mask: Any, **_: Any) -> Any:
            hidden = torch.stack([input_ids, attention_mask.long()], dim=-1).float()
            return type("Out", (), {"hidden_states": [hidden]})()

    class ArithmeticReward(nn.Module):
        base_model_prefix = "backbone"

        def __init__(self) -> None:
            super().__init__()
            self.backbone = Backbone()

        def score(self, hidden: Any) -> Any:
            ids, mask = hidden[..., 0].long(), hidden[..., 1].bool()
            rewards = [
                arithmetic_reward(tokenizer.decode(row[m].tolist(), skip_special_tokens=True))
                for row, m in zip(ids, mask, strict=True)
            ]
            column = torch.tensor(rewards, dtype=torch.float32)[:, None, None]
            return column.expand(ids.shape[0], ids.shape[1], 1).clone()

    return ArithmeticReward()


def trl_worker(args: argparse.Namespace) -> None:
    import datasets
    import torch
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
        TrainerCallback,
    )
    from trl.experimental.ppo import PPOConfig, PPOTrainer

    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    tokenizer.padding_side = "left"
    prompts = [json.loads(line)["prompt"] for line in Path(args.train).read_text().splitlines()]
    dataset = datasets.Dataset.from_dict(
        {"input_ids": [tokenizer(p)["input_ids"] for p in prompts]}
    )
    config = PPOConfig(
        output_dir=str(Path(args.out).parent / "trl_out"),
        report_to="none",
        seed=args.seed,
        learning_rate=1e-4,
        lr_scheduler_type="constant",
        max_grad_norm=0.5,
        per_device_train_batch_size=PROMPTS_PER_UPDATE,  # one micro batch per minibatch
        gradient_accumulation_steps=1,
        num_mini_batches=PROMPTS_PER_UPDATE // MINIBATCH,
        num_ppo_epochs=EPOCHS,
        total_episodes=PROMPTS_PER_UPDATE * args.updates,
        local_rollout_forward_batch_size=PROMPTS_PER_UPDATE,
        response_length=MAX_NEW_TOKENS,
        temperature=1.0,
        stop_token="eos",
        kl_coef=0.05,
        kl_estimator="k1",
        cliprange=0.2,
        cliprange_value=0.2,
        vf_coef=0.5,
        gamma=1.0,
        lam=1.0,
        num_sample_generations=0,
        logging_steps=1,
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    collected: list[dict[str, float]] = []

    class Collect(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            row = logs or {}
            if "objective/scores" in row:
                collected.append(
                    {k: float(v) for k, v in row.items() if isinstance(v, int | float)}
                )

    policy = AutoModelForCausalLM.from_pretrained(args.model)
    value = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=1)
    value.config.pad_token_id = tokenizer.pad_token_id
    trainer = PPOTrainer(
        args=config,
        processing_class=tokenizer,
        model=policy,
        ref_model=AutoModelForCausalLM.from_pretrained(args.model),
        reward_model=reward_model(tokenizer),
        train_dataset=dataset,
        value_model=value,
        eval_dataset=dataset.select(range(PROMPTS_PER_UPDATE)),
        callbacks=[Collect()],
    )
    seconds = measured(trainer.train)[1]["wall_s"]
    final = Path(args.out).parent / "trl_final"
    policy.save_pretrained(final)
    tokenizer.save_pretrained(final)
    Path(args.out).write_text(
        json.dumps(
            {"logs": collected, "train_seconds": seconds, "final_model": str(final)}, indent=1
        )
    )


# --- Driver: runs in the project's venv --------------------------------------------------------


def fifths(values: list[float]) -> tuple[float, float]:
    fifth = max(len(values) // 5, 1)
    return sum(values[:fifth]) / fifth, sum(values[-fifth:]) / fifth


def platform_start(updates: int, env: dict[str, str], work: Path) -> Launched:
    command = [
        str(Path(sys.executable).parent / "ppo-platform"), "run",
        str(REPO / "specs" / "lm_arithmetic.yaml"), "--quiet",
        "--set", f"budget.updates={updates}", "--set", "evaluation.every_updates=0",
    ]  # fmt: skip
    return Launched(command, env, work / "platform.log")


def platform_result(home: Path, timed: Launched) -> dict[str, Any]:
    from mlflow.tracking import MlflowClient

    from ppo_platform.training.lm_demo import heldout_accuracy, split_records

    done = timed.wait()
    wall, cpu = done["wall_s"], done["cpu_s"]
    client = MlflowClient(f"sqlite:///{home / 'mlflow.db'}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "lm-arithmetic"]
    (run,) = client.search_runs([experiment.experiment_id])
    rewards = [m.value for m in client.get_metric_history(run.info.run_id, "lm/reward_mean")]
    final = home / "runs" / run.info.run_id / "final" / "model"
    return {
        "rewards": rewards,
        "greedy_heldout": heldout_accuracy(final, split_records()[1], greedy=True),
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "kl_ref_final": run.data.metrics.get("lm/kl_ref"),
    }


def trl_start(demo: Any, updates: int, env: dict[str, str], work: Path) -> Launched:
    command = [
        str(TRL_PYTHON), "-m", MODULE, "--trl-worker", "--model", str(demo.model),
        "--train", str(demo.train), "--updates", str(updates), "--out", str(work / "trl.json"),
    ]  # fmt: skip
    return Launched(command, {**env, "PYTHONPATH": str(ROOT)}, work / "trl.log")


def trl_result(timed: Launched, work: Path) -> dict[str, Any]:
    from ppo_platform.training.lm_demo import heldout_accuracy, split_records

    done = timed.wait()
    wall, cpu = done["wall_s"], done["cpu_s"]
    found = json.loads((work / "trl.json").read_text())
    return {
        "rewards": [row["objective/scores"] for row in found["logs"]],
        "kl_final": found["logs"][-1].get("objective/kl") if found["logs"] else None,
        "greedy_heldout": heldout_accuracy(
            Path(found["final_model"]), split_records()[1], greedy=True
        ),
        "wall_seconds": wall,
        "cpu_seconds": cpu,
    }


def report(result: dict[str, Any], updates: int) -> str:
    load = result["load_average"]
    lines = [
        "# ppo-platform vs TRL PPOTrainer on the language-model demo",
        "",
        f"`nice -n 10 .venv/bin/python -m benchmarks.learning.trl_side_by_side --updates {updates}"
        + (" --parallel" if result["parallel"] else "")
        + "` "
        f"(2 shared CPU cores; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the "
        "end, other work running: wall times are not comparable as absolutes, CPU seconds are "
        "the better measure). "
        + ("Both ran at once" if result["parallel"] else "Runs one after the other")
        + ", one seed each; trl 1.12.0 "
        "(trl.experimental.ppo), transformers 5.24.0, torch 2.13.0 CPU.",
        "",
        f"SFT greedy held-out accuracy: {result['sft_accuracy']:.3f}. Same model, prompts, "
        "reward and sizes (see the script's docstring for what TRL makes differ).",
        "",
        "| trainer | updates | reward first fifth | reward last fifth | greedy held-out "
        "accuracy | final KL to the reference | wall s | CPU s | CPU s per update |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("platform", "trl"):
        row = result[name]
        first, last = fifths(row["rewards"])
        kl = row.get("kl_ref_final", row.get("kl_final"))
        lines.append(
            f"| {name} | {len(row['rewards'])} | {first:.3f} | {last:.3f} | "
            f"{row['greedy_heldout']:.3f} | {kl:.3f} | {row['wall_seconds']:.0f} | "
            f"{row['cpu_seconds']:.0f} | {row['cpu_seconds'] / max(len(row['rewards']), 1):.2f} |"
        )
    lines += [
        "",
        "Reward: the training rollouts' share of correct sums (platform `lm/reward_mean`, TRL "
        "`objective/scores`). KL: nats per response (platform `lm/kl_ref`, TRL "
        "`objective/kl`). CPU: the trainer process's own user + system time, start-up "
        "included. One seed: the held-out accuracies of single runs differ by several points "
        "from seed to seed (see the demo's accuracy benchmark), so they rank nothing here.",
    ]
    lines += ["", "Mean training reward per update, every tenth update:", ""]
    lines += ["| update | platform | trl |", "|---|---|---|"]
    plat, trl = result["platform"]["rewards"], result["trl"]["rewards"]
    step = max(len(plat) // 10, 1)
    for i in range(0, max(len(plat), len(trl)), step):
        cells = [f"{r[i]:.3f}" if i < len(r) else "-" for r in (plat, trl)]
        lines.append(f"| {i + 1} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def demo_files(home: Path, copy_from: Path | None) -> Any:
    """`lm init-demo` in `home`, or a copy of the demo another home built (same seed)."""
    import shutil

    from ppo_platform.settings import get_settings
    from ppo_platform.training.lm_demo import DemoFiles, greedy_accuracy, init_demo, split_records

    if copy_from is None:
        return init_demo(get_settings())
    shutil.copytree(copy_from / "lm", home / "lm")
    folder = home / "lm" / "arithmetic"
    accuracy = greedy_accuracy(folder / "sft", split_records()[1])
    return DemoFiles(
        folder, folder / "sft", folder / "train.jsonl", folder / "heldout.jsonl", accuracy, 0.0
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-name", default="trl_side_by_side")
    parser.add_argument(
        "--demo-from", type=Path, help="A platform home whose lm/ holds the built demo."
    )
    parser.add_argument(
        "--parallel", action="store_true", help="Run both at once (a loaded machine's choice)."
    )
    parser.add_argument("--trl-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--train", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    if args.trl_worker:
        trl_worker(args)
        return
    if not TRL_PYTHON.exists():
        raise SystemExit(f"{TRL_PYTHON} is missing: run `make bench-trl-venv` first.")
    home = Path(tempfile.mkdtemp(prefix="trl_side_by_side_"))
    os.environ["PPO_PLATFORM_HOME"] = str(home)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    demo = demo_files(home, args.demo_from)
    result: dict[str, Any] = {"sft_accuracy": demo.sft_accuracy, "updates": args.updates}
    if args.parallel:  # both at once, each process's own CPU time measured
        platform, trl = (
            platform_start(args.updates, env, home),
            trl_start(demo, args.updates, env, home),
        )
        result["platform"], result["trl"] = platform_result(home, platform), trl_result(trl, home)
    else:
        result["platform"] = platform_result(home, platform_start(args.updates, env, home))
        result["trl"] = trl_result(trl_start(demo, args.updates, env, home), home)
    result["parallel"] = args.parallel
    result["load_average"] = load_averages()
    result["command"], result["machine"] = command_line(MODULE), machine()
    write_results(result, args.out_name, lambda r: report(r, args.updates))


if __name__ == "__main__":
    main()

"""Where a 256-step `ppo-platform run` spends its fixed cost: cProfile of the whole process.

Runs the CLI once untimed (creates the MLflow database), then once under cProfile (evaluation
off), and prints the cumulative seconds of the platform's fixed-cost steps. cProfile inflates
Python-heavy parts; read the numbers as shares, not as wall time.

    python benchmarks/profile_fixed_cost.py
"""

from __future__ import annotations

import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ["run", "specs/cartpole.yaml", "--set", "budget.total_timesteps=256", "--quiet"]
EVAL_OFF = ["--set", "evaluation.every_timesteps=0", "--set", "evaluation.episodes=1"]
# (label, file suffix, function name): what the training process pays before/after `learn`.
STEPS = [
    ("whole CLI command", "ppo_platform/cli/app.py", "run"),
    ("start_guard: orphan reaper", "ppo_platform/cli/app.py", "start_guard"),
    ("  import mlflow (first import)", "mlflow/__init__.py", "<module>"),
    ("  MlflowClient + store open", "mlflow/tracking/client.py", "__init__"),
    ("import torch", "torch/__init__.py", "<module>"),
    ("import stable_baselines3", "stable_baselines3/__init__.py", "<module>"),
    ("build_model (Adam init imports torch._dynamo)", "training/algorithms.py", "build_model"),
    ("RemoteRun.open (hand the run to the tracking process)", "tracking/remote.py", "open"),
    ("model.learn (256 steps)", "common/on_policy_algorithm.py", "learn"),
    ("_finish: final eval + saves + artifacts + close", "training/runner.py", "_finish"),
    ("  final evaluation", "trainers/evaluation.py", "evaluate_episodes"),
    ("  plot (matplotlib import + render)", "tracking/plots.py", "plot_training_curves"),
    ("  close the run, wait until durable (finish)", "tracking/remote.py", "finish"),
]


def main() -> None:
    home = tempfile.mkdtemp(prefix="ppo_profile_")
    env = {**os.environ, "PPO_PLATFORM_HOME": home}
    env["PYTHONPATH"] = f"{ROOT / 'platform'}:{ROOT}"
    exe = str(Path(sys.executable).with_name("ppo-platform"))
    subprocess.run([exe, *RUN], cwd=ROOT, env=env, check=True, capture_output=True)
    out = Path(home) / "profile.out"
    command = [sys.executable, "-m", "cProfile", "-o", str(out), exe, *RUN, *EVAL_OFF]
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
    stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
    print("| step | cumulative s (cProfile) |")
    print("|---|---|")
    for label, suffix, name in STEPS:
        times = [v[3] for k, v in stats.items() if k[0].endswith(suffix) and k[2] == name]
        print(f"| {label} | {max(times):.2f} |" if times else f"| {label} | not called |")


if __name__ == "__main__":
    main()

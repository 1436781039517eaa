"""The GPU check: `policy.device` on a CUDA machine, end to end, in at most 8 minutes.

Trains the planned Atari spec (`ppo-platform plan --use-case atari`, with `policy.device:
auto`, which must resolve to `cuda` for its CNN) and the CartPole spec (`policy.device: cuda`)
as whole `ppo-platform run` processes, each also on `cpu`, alternating the order; prints env
steps per second (the run's own `time/fps` and budget / process wall) against the CPU; then
loads every GPU-trained `final/model.zip` on the CPU, in a process that sees no GPU, with plain
stable-baselines3 and with `ppo-platform enjoy`.

    python -m benchmarks.throughput.gpu_check                       # on a machine with a GPU
    python -m benchmarks.throughput.gpu_check --devices cpu --specs cartpole  # the harness only

Without a CUDA device and with `cuda` asked for, it says so and exits 2 before any training.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, command_line, header, machine, versions, write_results

LIMIT_S = 480.0  # the whole check: 8 minutes
SPECS = ("atari", "cartpole")
CLI = [sys.executable, "-m", "ppo_platform.cli"]
LOAD_ON_CPU = """
import json, sys
from stable_baselines3 import PPO
model = PPO.load(sys.argv[1], device="cpu")
action, _ = model.predict(model.observation_space.sample(), deterministic=True)
print(json.dumps({"device": str(model.device), "action": str(action)}))
"""


def cuda_state() -> dict[str, Any]:
    import torch

    available = torch.cuda.is_available()
    return {
        "torch": torch.__version__,
        "cuda_build": torch.version.cuda,
        "available": available,
        "name": torch.cuda.get_device_name(0) if available else None,
    }


def prepare_spec(name: str, folder: Path, steps: int) -> Path:
    """The spec file of `name`: Atari as `plan` writes it, CartPole from specs/."""
    if name == "cartpole":
        return ROOT / "specs" / "cartpole.yaml"
    out = folder / "atari-plan"
    command = [*CLI, "plan", "--env", "ALE/Breakout-v5", "--use-case", "atari"]
    subprocess.run([*command, "--budget", str(steps), "--out", str(out)], check=True)
    return out / "spec.yaml"


def device_setting(name: str, device: str) -> str:
    """Atari on the GPU through `auto` (the setting that had never run on one), else as asked."""
    return "auto" if name == "atari" and device == "cuda" else device


def train(spec: Path, name: str, device: str, steps: int, home: Path, deadline: float) -> dict:
    """One whole `ppo-platform run`: wall, the run's fps and resolved device, its model."""
    before = set(os.listdir(home / "runs")) if (home / "runs").exists() else set()
    sets = [f"policy.device={device_setting(name, device)}", f"budget.total_timesteps={steps}"]
    command = [*CLI, "run", str(spec), "--quiet", *[a for s in sets for a in ("--set", s)]]
    started = time.perf_counter()
    finished = run_bounded(command, {**os.environ, "PPO_PLATFORM_HOME": str(home)}, deadline)
    wall = time.perf_counter() - started
    row: dict[str, Any] = {"spec": name, "device": device, "setting": device_setting(name, device)}
    row.update(wall_s=round(wall, 1), exit=finished["exit"], tail=finished["tail"])
    new = sorted(set(os.listdir(home / "runs")) - before) if (home / "runs").exists() else []
    if finished["exit"] != 0 or len(new) != 1:
        return row
    run_dir = home / "runs" / new[0]
    resolved = json.loads((run_dir / "resolved.json").read_text())
    row.update(
        run_id=new[0],
        resolved_device=resolved.get("device"),
        fps=last_metric(home, new[0], "time/fps"),
        steps_per_s_process=round(steps / wall, 1),
        model=str(run_dir / "final" / "model.zip"),
    )
    return row


def run_bounded(command: list[str], env: dict[str, str], deadline: float) -> dict[str, Any]:
    """Run `command` until it ends or the check's deadline: then SIGINT (the run closes KILLED
    with a checkpoint), and SIGKILL 30 s later. Its exit code and the tail of its output."""
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        out.seek(0)
        tail = out.read().decode(errors="replace")[-1500:]
    return {"exit": process.returncode, "tail": tail}


def last_metric(home: Path, run_id: str, key: str) -> float | None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{home / 'mlflow.db'}")
    history = client.get_metric_history(run_id, key)
    return round(history[-1].value, 1) if history else None


def load_on_cpu(row: dict[str, Any], home: Path, deadline: float) -> dict[str, Any]:
    """The GPU-trained model.zip in a process that sees no GPU: plain SB3, then `enjoy`."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PPO_PLATFORM_HOME": str(home)}
    plain = run_bounded([sys.executable, "-c", LOAD_ON_CPU, row["model"]], env, deadline)
    enjoy = run_bounded([*CLI, "enjoy", row["run_id"], "--episodes", "1"], env, deadline)
    return {
        "spec": row["spec"],
        "plain_sb3_exit": plain["exit"],
        "plain_sb3": plain["tail"].strip().splitlines()[-1:] or [""],
        "enjoy_exit": enjoy["exit"],
        "enjoy": enjoy["tail"].strip().splitlines()[-1:] or [""],
    }


def check(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    deadline = time.monotonic() + args.limit_s
    steps = {"atari": args.atari_steps, "cartpole": args.cartpole_steps}
    home = folder / "home"
    rows = []
    for index, name in enumerate(args.specs):
        spec = prepare_spec(name, folder, steps[name])
        order = args.devices if index % 2 == 0 else list(reversed(args.devices))
        for device in order:
            rows.append(train(spec, name, device, steps[name], home, deadline))
    loads = [
        load_on_cpu(row, home, deadline)
        for row in rows
        if row["device"] == "cuda" and row.get("model")
    ]
    return {"trained": rows, "loaded_on_cpu": loads}


def render(report: dict[str, Any]) -> str:
    lines = header("The GPU check: `policy.device` on a CUDA machine", report)
    lines += ["", f"CUDA: {report['cuda']}.", ""]
    lines += [
        "| spec | device asked | setting | resolved | exit | wall s | env steps/s (run's fps)"
        " | env steps/s (budget / process wall) |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for row in report["trained"]:
        lines.append(
            f"| {row['spec']} | {row['device']} | {row['setting']} | "
            f"{row.get('resolved_device', '-')} | {row['exit']} | {row['wall_s']} | "
            f"{row.get('fps', '-')} | {row.get('steps_per_s_process', '-')} |"
        )
    lines += ["", "GPU-trained models loaded where no GPU is visible:", ""]
    lines += ["| spec | plain SB3 exit | its answer | `enjoy` exit | its last line |"]
    lines += ["|---|---:|---|---:|---|"]
    for load in report["loaded_on_cpu"]:
        lines.append(
            f"| {load['spec']} | {load['plain_sb3_exit']} | {load['plain_sb3'][0]} | "
            f"{load['enjoy_exit']} | {load['enjoy'][0]} |"
        )
    failed = [r for r in report["trained"] if r["exit"] != 0]
    for row in failed:
        lines += ["", f"{row['spec']} on {row['device']} exited {row['exit']}:", "```"]
        lines += [row["tail"], "```"]
    return "\n".join(lines) + "\n"


def env_steps(text: str) -> int:
    """A budget in env steps: a whole number of at least 1 (checked before anything trains)."""
    try:
        steps = int(text)
    except ValueError:
        steps = 0
    if steps < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of env steps >= 1")
    return steps


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="cuda,cpu", help="comma-separated (cuda,cpu)")
    parser.add_argument("--specs", default=",".join(SPECS), help="comma-separated: atari,cartpole")
    parser.add_argument("--atari-steps", type=env_steps, default=40_960)
    parser.add_argument("--cartpole-steps", type=env_steps, default=40_960)
    parser.add_argument("--limit-s", type=float, default=LIMIT_S, help="for the whole check")
    parser.add_argument("--out", default="gpu_check", help="results stem (benchmarks/results/)")
    args = parser.parse_args(argv)
    args.devices = [d for d in args.devices.split(",") if d]
    args.specs = [s for s in args.specs.split(",") if s]
    wrong = [d for d in args.devices if d not in ("cuda", "cpu")]
    wrong += [s for s in args.specs if s not in SPECS]
    if wrong:
        parser.error(
            f"unknown device or spec {', '.join(wrong)}: devices are cuda and cpu, specs "
            f"{' and '.join(SPECS)}"
        )
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    cuda = cuda_state()
    if "cuda" in args.devices and not cuda["available"]:
        print(
            f"no CUDA device here (torch {cuda['torch']}, CUDA build {cuda['cuda_build']}): "
            "this check needs a GPU machine. Run it there, or pass --devices cpu to try the "
            "harness alone.",
            file=sys.stderr,
        )
        sys.exit(2)
    report: dict[str, Any] = {
        "command": command_line("benchmarks.throughput.gpu_check"),
        "machine": machine(),
        "versions": versions("torch", "stable-baselines3", "gymnasium", "ale-py"),
        "cuda": cuda,
    }
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as folder:
        report.update(check(args, Path(folder)))
    write_results(report, args.out, render)
    trained_ok = all(row["exit"] == 0 for row in report["trained"])
    loaded_ok = all(
        load["plain_sb3_exit"] == 0 and load["enjoy_exit"] == 0 for load in report["loaded_on_cpu"]
    )
    sys.exit(0 if trained_ok and loaded_ok else 1)


if __name__ == "__main__":
    main()

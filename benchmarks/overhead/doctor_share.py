"""What the doctor costs a run: the share of a training run's wall time spent in the doctor.

A run pays the doctor in four places (training/diagnosis.py): every update records the few
metrics it reads (`DoctorMetrics.record`), every live alert asks it for the likely cause so far
(`cause_hint`), and the run's end diagnoses the whole run (`session_diagnosis`) and writes
`diagnosis.json` (`write_diagnosis`). Each is wrapped with a timer for the run, in this
process, and the sum is reported against the run's wall time (`run_spec` from the call to the
return), for a healthy run of specs/cartpole.yaml and for one that raises alerts every few
updates (learning rate 0.05, K 30: approx KL far past its threshold, so `cause_hint` runs on
each). Rounds alternate the two; medians with min and max. Results go to
benchmarks/results/doctor_share.{md,json}.

    python -m benchmarks.overhead.doctor_share                      # 100k steps, 3 rounds
    python -m benchmarks.overhead.doctor_share --steps 4096 --rounds 1 --out /tmp/doctor_share
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.harness import ROOT, command_line, header, load1, machine, write_results

SPEC = ROOT / "specs" / "cartpole.yaml"
QUIET = ["evaluation.every_timesteps=0", "evaluation.episodes=1", "checkpoints.every_timesteps=0"]
VARIANTS: dict[str, list[str]] = {
    "healthy (specs/cartpole.yaml)": [],
    "alerting (learning rate 0.05, K 30)": ["update.learning_rate=0.05", "update.epochs=30"],
}
TIMED = ("record", "cause_hint", "session_diagnosis", "write_diagnosis")


@contextlib.contextmanager
def timed_doctor() -> Iterator[dict[str, float]]:
    """The doctor's entry points wrapped for the duration: seconds and calls of each, counted
    at the outermost call only (`cause_hint` diagnoses through `session_diagnosis`)."""
    from ppo_platform.training import diagnosis, final_artifacts

    spent: dict[str, float] = {f"{name}_{part}": 0.0 for name in TIMED for part in ("s", "n")}
    originals: list[tuple[Any, str, Any]] = []
    inside = [False]

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)
        originals.append((owner, name, original))

        def timed(*args: Any, **kwargs: Any) -> Any:
            if inside[0]:
                return original(*args, **kwargs)
            inside[0] = True
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[f"{label}_s"] += time.perf_counter() - started
                spent[f"{label}_n"] += 1
                inside[0] = False

        setattr(owner, name, timed)

    wrap(diagnosis.DoctorMetrics, "record", "record")
    for name in TIMED[1:]:
        wrap(diagnosis, name, name)
    wrap(final_artifacts, "write_diagnosis", "write_diagnosis")  # imported there by name
    try:
        yield spent
    finally:
        for owner, name, original in reversed(originals):
            setattr(owner, name, original)


def one_run(steps: int, overrides: list[str]) -> dict[str, float]:
    """One run of the spec in this process: its wall time and the doctor's share of it."""
    from ppo_platform.spec.loader import load_spec
    from ppo_platform.training.runner import run_spec

    sets = [f"budget.total_timesteps={steps}", *QUIET, *overrides]
    spec = load_spec(SPEC, sets)
    with timed_doctor() as spent:
        started = time.perf_counter()
        result = run_spec(spec)
        wall = time.perf_counter() - started
    doctor = sum(spent[f"{name}_s"] for name in TIMED)
    return {
        **spent,
        "wall_s": wall,
        "doctor_s": doctor,
        "share": doctor / wall,
        "alerts": float(result.alerts),
    }


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median": ordered[len(ordered) // 2], "min": ordered[0], "max": ordered[-1]}


def measure(steps: int, rounds: int, run: Callable[[int, list[str]], dict] = one_run) -> dict:
    run(min(steps, 2048), [])  # untimed: imports and first-use costs
    samples: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    for index in range(rounds):
        order = list(VARIANTS) if index % 2 == 0 else list(reversed(VARIANTS))
        for name in order:
            samples[name].append(run(steps, VARIANTS[name]))
    rows = []
    for name, runs in samples.items():
        row: dict[str, Any] = {"variant": name, "samples": runs}
        for key in ("wall_s", "doctor_s", "share", "alerts", "cause_hint_n"):
            row[key] = _summary([r[key] for r in runs])
        rows.append(row)
    return {"steps": steps, "rounds": rounds, "rows": rows}


def _cell(s: dict[str, float], scale: float = 1.0, digits: int = 3) -> str:
    low, high = s["min"] * scale, s["max"] * scale
    return f"{s['median'] * scale:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def render(result: dict) -> str:
    lines = [
        *header("What the doctor costs a run", result),
        "",
        f"1-min load {result['load1_before']:.2f} before, {result['load1']:.2f} after; one torch"
        " thread, nothing else started by the benchmark.",
        "",
        f"CartPole-v1, {result['steps']} env steps, torch path, evaluation and checkpoints off;"
        f" {result['rounds']} rounds, alternating; medians (min-max). The doctor: every"
        " update's record of its metrics, the likely cause named with each live alert, the"
        " diagnosis at the end and diagnosis.json, each timed in the run's process.",
        "",
        "| run | wall, s | doctor, s | doctor's share | alerts | causes asked live |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['variant']} | {_cell(row['wall_s'], digits=2)} | {_cell(row['doctor_s'])} |"
            f" {_cell(row['share'], 100, 2)} % | {_cell(row['alerts'], digits=0)} |"
            f" {_cell(row['cause_hint_n'], digits=0)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="doctor_share", help="results file stem or path")
    args = parser.parse_args(argv)
    if args.steps < 256 or args.rounds < 1:
        parser.error(
            f"needs --steps >= 256 and --rounds >= 1; given --steps {args.steps}"
            f" --rounds {args.rounds}"
        )
    started_at = machine()
    before = load1()
    result = measure(args.steps, args.rounds)
    result.update(
        machine=started_at,
        command=command_line("benchmarks.overhead.doctor_share"),
        load1_before=before,
        load1=load1(),
    )
    write_results(result, args.out, render)  # a path is written there, a stem to results/


if __name__ == "__main__":
    main()

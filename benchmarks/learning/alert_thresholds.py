"""Do the KL alerts of a finished run mean something? Its logged KL against its eval curve.

For each run (a `PPO_PLATFORM_HOME` and the MLflow run id in it), read the post-update KL of
every update (`train/approx_kl_post`, what the alert reads by default; `train/approx_kl` for
runs without it) and the evaluations (`eval/mean_reward`), and for each KL
alert threshold count (a) the updates that would raise the alert, (b) the *regressions*: an
evaluation more than `--drop` below the best evaluation so far, and how many of them had an
alert in the `--window` env steps before them, (c) the alerts with no regression in the
window after them (false alarms, read as such only on a run that ends at or above the
published return). The alerts are a pure function of the logged KL, so every threshold is
judged on the same training run, without training again.

    python -m benchmarks.learning.alert_thresholds --run HOME RUN_ID [--run HOME RUN_ID ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.harness.verdicts import judge

THRESHOLDS = (0.1, 0.15, 0.2, 0.3, 0.5)


def read_run(home: Path, run_id: str) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """(step, KL) per update and (step, mean return) per evaluation of one run."""
    from ppo_platform.tracking.gateway import tracking_client
    from ppo_platform.tracking.queries import metric_history

    store = home / "mlflow.db"
    if not store.is_file():  # MLflow would create an empty store there
        raise SystemExit(f"{home}: no mlflow.db (pass the PPO_PLATFORM_HOME the run used)")
    client = tracking_client(f"sqlite:///{store}")
    keys = ["train/approx_kl_post", "train/approx_kl", "eval/mean_reward"]
    series = metric_history(client, run_id, keys)
    kl = series["train/approx_kl_post"] or series["train/approx_kl"]
    if not kl:
        raise SystemExit(f"run {run_id} in {store}: no KL logged (is it a PPO run's id?)")
    return kl, series["eval/mean_reward"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", nargs=2, action="append", required=True, metavar=("HOME", "ID"))
    parser.add_argument("--window", type=int, default=50_000, help="env steps before a fall")
    parser.add_argument("--drop", type=float, default=0.2, help="fall below the best so far")
    args = parser.parse_args()
    print(f"regression: an evaluation {args.drop:.0%} below the best so far; window {args.window}")
    print("| run | updates | median KL | threshold | alerts | regressions | warned | idle |")
    print("|---|---|---|---|---|---|---|---|")
    for home, run_id in args.run:
        kl, evaluations = read_run(Path(home), run_id)
        values = sorted(value for _, value in kl)
        median = values[len(values) // 2] if values else float("nan")
        for threshold in THRESHOLDS:
            j = judge(kl, evaluations, threshold, args.window, args.drop)
            print(
                f"| {Path(home).name} | {len(kl)} | {median:.3f} | {threshold} | {j['alerts']} | "
                f"{j['regressions']} | {j['warned']} | {j['idle']} |"
            )


if __name__ == "__main__":
    main()

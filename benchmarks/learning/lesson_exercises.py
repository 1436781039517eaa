"""Collect the lesson exercises' sweep results into benchmarks/results/lesson_exercises/.

For each sweep (NAME=PARENT_RUN_ID) the comparison report is rebuilt from MLflow into
`results/lesson_exercises/NAME/` (report.md, summary.json, returns.png, kl.png, update_size.png),
and one page gathers, per variant, how large the updates were: the post-update KL
(`train/approx_kl_post`) median, 90th percentile and max over all updates of all seeds, the share
of updates above the healthy KL (0.02) and the alert (0.1), the clip fraction (mean, share of
updates above the drift level 0.4), the final return and the mean eval return over training,
the alerts per signal, the sweep's wall time, the machine, the versions and the load average
sampled while the sweeps ran.

    PPO_PLATFORM_HOME=... .venv/bin/python -m benchmarks.learning.lesson_exercises \\
        ex2_lesson_regime=PARENT_RUN_ID ex3_lesson_regime=PARENT_RUN_ID [--load-log FILE]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import RESULTS, load1, machine, machine_line, versions, write_results
from ppo_platform.reports import build_report
from ppo_platform.reports.stats import SeedRun
from ppo_platform.settings import get_settings
from ppo_platform.tracking.gateway import tracking_client

OUT = RESULTS / "lesson_exercises"
NAME = re.compile(r"^[a-z0-9_]{1,40}$")
RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def update_sizes(runs: list[SeedRun]) -> dict[str, Any]:
    """Post-update KL and clip fraction over every update of every finished seed."""
    ok = [run for run in runs if run.finished]
    post = np.array([v for run in ok for _, v in run.approx_kl_post])
    clip = np.array([v for run in ok for _, v in run.clip_fraction])
    finals = [run.evals[-1][1] for run in ok if run.evals]
    # Area under the eval curve / its length: rewards learning early and staying there.
    averages = [np.mean([v for _, v in run.evals]) for run in ok if run.evals]
    return {
        "mean_eval_over_training": float(np.mean(averages)) if averages else None,
        "mean_eval_over_training_std": float(np.std(averages)) if averages else None,
        "seeds": len(ok),
        "final_mean": float(np.mean(finals)) if finals else None,
        "final_std": float(np.std(finals)) if finals else None,
        "post_kl_median": float(np.median(post)) if post.size else None,
        "post_kl_p90": float(np.percentile(post, 90)) if post.size else None,
        "post_kl_max": float(post.max()) if post.size else None,
        "share_post_kl_above_0.02": float((post > 0.02).mean()) if post.size else None,
        "share_post_kl_above_0.1": float((post > 0.1).mean()) if post.size else None,
        "clip_mean": float(clip.mean()) if clip.size else None,
        "share_clip_above_0.4": float((clip > 0.4).mean()) if clip.size else None,
        "updates": int(post.size),
    }


def collect(name: str, parent_run_id: str) -> dict[str, Any]:
    client = tracking_client(get_settings().tracking_uri)
    report = build_report(client, parent_run_id, OUT / name)
    parent = client.get_run(parent_run_id)
    wall = (parent.info.end_time - parent.info.start_time) / 1000 if parent.info.end_time else None
    groups: dict[str, list[SeedRun]] = {}
    for run in report.runs:
        groups.setdefault(run.variant, []).append(run)
    variants = []
    for summary in report.variants:
        row = {"variant": summary.variant, "alerts": summary.alerts}
        row |= {"alerts_by_signal": summary.alerts_by_signal}
        variants.append(row | update_sizes(groups[summary.variant]))
    return {"name": name, "parent_run_id": parent_run_id, "wall_s": wall, "variants": variants}


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}g}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def markdown(sweeps: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Lesson exercises 2 and 3 in the lesson's regime: how large the updates were",
        "",
        f"{meta['date']} · {meta['machine']} · {meta['versions']}",
        f"Load average (1 min) while the sweeps ran: {meta['load']}",
        "",
    ]
    if meta.get("note"):
        lines += [meta["note"], ""]
    for sweep in sweeps:
        wall = "n/a" if sweep["wall_s"] is None else f"{sweep['wall_s']:,.0f} s"
        lines += [
            f"## {sweep['name']} (parent run `{sweep['parent_run_id']}`, wall {wall})",
            "",
            "| variant | final return | mean eval return over training | post-update KL median "
            "| p90 | max | updates > 0.02 | updates > 0.1 | clip fraction mean | updates > 0.4 "
            "| alerts (per signal) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for v in sweep["variants"]:
            signals = ", ".join(f"{k} {n}" for k, n in v["alerts_by_signal"].items()) or "-"
            lines.append(
                f"| {v['variant']} | {_f(v['final_mean'], 4)} ± {_f(v['final_std'], 3)} | "
                f"{_f(v['mean_eval_over_training'], 4)} ± "
                f"{_f(v['mean_eval_over_training_std'], 2)} | "
                f"{_f(v['post_kl_median'])} | {_f(v['post_kl_p90'])} | {_f(v['post_kl_max'])} | "
                f"{_pct(v['share_post_kl_above_0.02'])} | {_pct(v['share_post_kl_above_0.1'])} | "
                f"{_f(v['clip_mean'])} | {_pct(v['share_clip_above_0.4'])} | "
                f"{v['alerts']} ({signals}) |"
            )
        lines += ["", f"Full report: [{sweep['name']}/report.md]({sweep['name']}/report.md)", ""]
    return "\n".join(lines)


def load_summary(path: Path | None) -> str:
    """min / median / max of the 1-minute load average sampled in `path` (`HH:MM:SS l1 l5 l15`)."""
    if path is None or not path.exists():
        return f"{load1():.1f} at writing (no samples)"
    samples = [float(line.split()[1]) for line in path.read_text().splitlines() if line.strip()]
    return (
        f"median {np.median(samples):.1f}, min {min(samples):.1f}, max {max(samples):.1f} "
        f"({len(samples)} samples, one a minute, 2 cores)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="+", help="NAME=PARENT_RUN_ID")
    parser.add_argument("--load-log", type=Path, default=None)
    parser.add_argument("--note", default="", help="A line for the page, e.g. how the runs went.")
    args = parser.parse_args()
    pairs = [item.split("=", 1) for item in args.sweeps]
    for pair in pairs:
        if len(pair) != 2 or not NAME.match(pair[0]) or not RUN_ID.match(pair[1]):
            parser.error(f"{'='.join(pair)!r}: give NAME=PARENT_RUN_ID (name [a-z0-9_], 32 hex)")
    sweeps = [collect(name, run_id) for name, run_id in pairs]
    m = machine()
    meta = {
        "date": f"{m['date_utc']} UTC",
        "machine": machine_line(m).removeprefix("Machine: ").rstrip("."),
        "versions": ", ".join(
            f"{pkg} {v}" for pkg, v in versions("torch", "stable-baselines3", "gymnasium").items()
        ),
        "load": load_summary(args.load_log),
        "note": args.note,
    }
    report = {"meta": meta, "sweeps": sweeps}
    write_results(report, "summary", lambda r: markdown(r["sweeps"], r["meta"]), folder=OUT)


if __name__ == "__main__":
    main()

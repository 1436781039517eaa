"""What a study leaves behind: the best spec (runnable as is), a summary, and plots.

Written to an output folder and logged as artifacts of the study's parent MLflow run.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppo_platform.errors import BadInputError, SpecIssue
from ppo_platform.spec.loader import dump_spec
from ppo_platform.spec.workloads import AnySpec, load_any_spec_text, spec_subject
from ppo_platform.tracking import tags as tag
from ppo_platform.tuning.errors import TuningError
from ppo_platform.tuning.events import failure_reason
from ppo_platform.tuning.method import method_lines
from ppo_platform.tuning.pareto import pareto_front, pareto_markdown, pareto_pick, track_front
from ppo_platform.tuning.space import base_data, build_trial_spec, decode
from ppo_platform.tuning.study import budget_unit, eval_schedule
from ppo_platform.tuning.verify_report import (
    held_out_best,
    study_totals,
    totals_line,
    verification_markdown,
)

PLOT_FILES = ("optimization_history.png", "param_importances.png", "pareto_front.png")

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class StudyOutputs:
    folder: Path
    best_spec: Path
    summary: Path
    summary_json: Path
    plots: list[Path]
    best_trial: int
    best_value: float


def best_spec(spec: AnySpec, trial: optuna.trial.FrozenTrial, *, from_outside: bool) -> AnySpec:
    """The best trial's complete spec, without the tune section (built and validated anew,
    under the study's caller's rules)."""
    assert spec.tune is not None
    params = {path: _decoded(spec, path, value) for path, value in trial.params.items()}
    return build_trial_spec(base_data(spec), params, from_outside=from_outside)


def _decoded(spec: AnySpec, path: str, value: Any) -> Any:
    assert spec.tune is not None
    dist = spec.tune.space.get(path)
    return decode(dist, value) if dist is not None else value


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def trial_rows(study: optuna.Study) -> list[dict[str, Any]]:
    """Every trial as plain data (also the summary's JSON)."""
    rows = []
    for t in study.get_trials(deepcopy=False):
        seconds = (
            (t.datetime_complete - t.datetime_start).total_seconds()
            if t.datetime_complete and t.datetime_start
            else None
        )
        reason = ""
        if t.state.name == "PRUNED":
            reason = t.user_attrs.get("pruned_reason", "")
        elif t.state.name == "FAIL":
            reason = failure_reason(t)
        values = list(t.values) if t.state.name == "COMPLETE" else None  # pruned: none
        rows.append(
            {
                "number": t.number,
                "state": t.state.name,
                "value": values[0] if values else None,
                "values": values,
                "seed_values": t.user_attrs.get("seed_values"),
                "raced_out": t.user_attrs.get("raced_out"),
                "params": t.params,
                "timesteps": t.user_attrs.get("timesteps"),
                "budget_timesteps": t.user_attrs.get("budget_timesteps"),
                "seconds": seconds,
                "pid": t.user_attrs.get("pid"),
                "retry_of": t.system_attrs.get("failed_trial"),
                "reason": reason,
                "top_causes": t.user_attrs.get("top_causes"),  # the doctor's, per seed
            }
        )
    return rows


def summary_markdown(
    spec: AnySpec,
    study: optuna.Study,
    storage_label: str,
    rows: list[dict[str, Any]],
    best: optuna.trial.FrozenTrial,
    verified: list[dict[str, Any]] | None = None,
) -> str:
    assert spec.tune is not None
    tune = spec.tune
    states: dict[str, int] = {}
    for row in rows:
        states[row["state"]] = states.get(row["state"], 0) + 1
    seeds = best.user_attrs.get("seeds", [])
    values = best.user_attrs.get("seed_values", [])
    lines = [
        f"# Study `{study.study_name}`",
        "",
        f"- spec: `{spec.name}` ({spec_subject(spec)}, {eval_schedule(spec)[1]} "
        f"{budget_unit(spec)} per seed)",
        f"- storage: `{storage_label}`",
        *method_lines(spec, rows),
        "- trials: " + ", ".join(f"{n} {s.lower()}" for s, n in sorted(states.items())),
        totals_line(rows, verified or []),
        "",
        *_verified_lines(spec, verified, best.number),
        *_pareto_lines(spec, study, best.number),
        f"## Best trial: {best.number}",
        "",
        f"searched value **{best.values[0]:.4g}**; per seed: "
        + ", ".join(f"seed {s}: {v:.4g}" for s, v in zip(seeds, values, strict=False)),
        "",
        "| parameter | value |",
        "|---|---|",
        *[f"| `{k}` | {_fmt(v)} |" for k, v in best.params.items()],
        "",
        "## Trials",
        "",
    ]
    names = list(tune.space)
    lines.append(
        "| # | state | value | per seed | env steps | s | "
        + " | ".join(f"`{n}`" for n in names)
        + " | note |"
    )
    lines.append("|" + "---|" * (7 + len(names)))
    for row in rows:
        per_seed = ", ".join(f"{v:.4g}" for v in row["seed_values"] or [])
        params = " | ".join(_fmt(row["params"].get(n)) for n in names)
        note = (row["reason"] or "").splitlines()[0][:120] if row["reason"] else ""
        lines.append(
            f"| {row['number']} | {row['state']} | {_fmt(row['value'])} | "
            f"{per_seed or '-'} | {_fmt(row['timesteps'])} | {_fmt(row['seconds'])} | "
            f"{params} | {note.replace('|', '/')} |"
        )
    return "\n".join(lines) + "\n"


def _pareto_lines(spec: AnySpec, study: optuna.Study, best: int) -> list[str]:
    assert spec.tune is not None
    if not spec.tune.multi:
        return []
    return pareto_markdown(pareto_front(study), spec.tune.scoring.threshold, best)


def _verified_lines(spec: AnySpec, verified: list[dict[str, Any]] | None, best: int) -> list[str]:
    if verified is None:
        return []
    assert spec.tune is not None and spec.tune.verify is not None
    chosen = best if any(v["held_out_value"] is not None for v in verified) else None
    verify = spec.tune.verify
    return verification_markdown(verified, list(verify.seeds), chosen, verify.solve_threshold)


OUTPUT_FILES = ("best_spec.yaml", "summary.md", "summary.json", *PLOT_FILES)


def save_plots(study: optuna.Study, folder: Path) -> list[Path]:
    """Optimization history and parameter importances (skipped if too few trials)."""
    import matplotlib

    matplotlib.use("Agg")
    import warnings

    import matplotlib.pyplot as plt
    import optuna.visualization.matplotlib as ovm
    from optuna.exceptions import ExperimentalWarning

    warnings.filterwarnings("ignore", category=ExperimentalWarning)
    written = []
    complete = [t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
    plots: list[tuple[str, Callable[[optuna.Study], Any], int]] = [
        (PLOT_FILES[0], ovm.plot_optimization_history, 1),
        (PLOT_FILES[1], ovm.plot_param_importances, 2),
    ]
    if len(study.directions) > 1:  # the two plots above need one objective
        names = ["final return", "env steps to threshold"]
        plots = [(PLOT_FILES[2], lambda s: ovm.plot_pareto_front(s, target_names=names), 1)]
    for name, plot, needed in plots:
        if len(complete) < needed:
            continue
        try:
            axes = plot(study)
        except (ValueError, RuntimeError):  # e.g. importances of a single-valued space
            continue
        figure = axes.figure if hasattr(axes, "figure") else axes[0].figure
        figure.set_size_inches(9, 5)
        figure.tight_layout()
        path = folder / name
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written


def _unwritable(folder: Path, exc: OSError) -> BadInputError:
    issue = SpecIssue(
        "--out",
        f"cannot write the study outputs: {exc.strerror or type(exc).__name__}.",
        str(folder),
        fix="pass a writable folder with --out.",
    )
    return BadInputError([issue])


def make_folder(folder: Path) -> None:
    """Create the output folder; one that cannot be created is bad input naming it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(folder, exc) from None


def check_writable(folder: Path) -> None:
    """Refuse, before any trial runs, a folder the outputs could not be written to: create it
    and a file in it, then remove what the probe created (the study writes it at the end).
    A real write, not os.access: root passes access checks that /proc or a file refuse."""
    missing = []
    probe = folder
    while not (probe.exists() or probe.is_symlink()) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    try:
        make_folder(folder)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise _unwritable(folder, exc) from None
    finally:
        for created in missing:  # deepest first
            try:
                created.rmdir()
            except OSError:
                break


def _chosen(
    spec: AnySpec, study: optuna.Study, verified: list[dict[str, Any]] | None
) -> tuple[optuna.trial.FrozenTrial, float, str]:
    """The best trial, its value and how it was chosen: by held-out score when verified, the
    Pareto front's highest return for two objectives."""
    assert spec.tune is not None
    tune = spec.tune
    best = pareto_pick(study) if tune.multi else _best_trial(study)
    if best is None:
        raise TuningError(
            f"study {study.study_name!r} has no completed trial: nothing to "
            "report. See the failed/pruned reasons above."
        )
    name = tune.scoring.type
    seeds = f"{tune.aggregate} over seeds {best.user_attrs.get('seeds')}"
    if tune.multi:
        how = (
            f"Pareto front, highest final return {best.values[0]:.4g} with "
            f"{best.values[1]:.0f} env steps to threshold ({seeds})"
        )
        return best, float(best.values[0]), how
    held_out = held_out_best(verified or [], tune.directions[0])
    if held_out is None:
        how = f"{name} {best.values[0]:.4g} ({seeds}: {best.user_attrs.get('seed_values')})"
        return best, float(best.values[0]), how
    trial = next(t for t in study.get_trials(deepcopy=False) if t.number == held_out["number"])
    how = (
        f"best lower 95% bound; held-out {name} {held_out['held_out_value']:.4g} ({tune.aggregate} "
        f"over held-out seeds {held_out['seeds']}: {held_out['seed_values']}; "
        f"searched {trial.values[0]:.4g})"
    )
    return trial, float(held_out["held_out_value"]), how


def _best_trial(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    try:
        return study.best_trial
    except ValueError:
        return None


def write_outputs(
    spec: AnySpec,
    study: optuna.Study,
    folder: Path,
    storage_label: str,
    tracker: Any | None = None,
    verified: list[dict[str, Any]] | None = None,
    *,
    from_outside: bool = False,
) -> StudyOutputs:
    """Write best_spec.yaml, summary.md/.json and plots to `folder` (and to the parent run).
    With `verified` (held-out results), the best is the best by held-out score."""
    best, value, how = _chosen(spec, study, verified)
    assert spec.tune is not None
    make_folder(folder)
    tuned = best_spec(spec, best, from_outside=from_outside)
    header = (
        f"# Best trial {best.number} of study '{study.study_name}': {how}.\n"
        "# Tuned: " + ", ".join(f"{k}" for k in best.params) + "\n"
    )
    # A resolved dump says `tune: null`; the best spec has no tune section at all.
    text = header + re.sub(r"(?m)^tune: null\n", "", dump_spec(tuned))
    load_any_spec_text(text, "best_spec.yaml", from_outside=from_outside)  # runnable as is
    spec_path = folder / "best_spec.yaml"
    spec_path.write_text(text)
    rows = trial_rows(study)
    summary_path = folder / "summary.md"
    summary_path.write_text(summary_markdown(spec, study, storage_label, rows, best, verified))
    json_path = folder / "summary.json"
    summary = {
        "study": study.study_name,
        "storage": storage_label,
        "best_trial": best.number,
        "best_value": value,
        "best_chosen_by": _chosen_by(spec, verified),
        "best_searched_value": best.values[0],
        "best_searched_values": best.values,
        "objective": spec.tune.scoring.model_dump(mode="json"),
        "directions": spec.tune.directions,
        "pruning": "off (multi-objective)" if spec.tune.multi else spec.tune.pruner.type,
        "racing": None if spec.tune.racing is None else spec.tune.racing.model_dump(mode="json"),
        "pareto_front": pareto_front(study) if spec.tune.multi else None,
        "best_params": best.params,
        "best_seed_values": best.user_attrs.get("seed_values"),
        **study_totals(rows, verified or []),
        "verification": verified,
        "trials": rows,
    }
    json_path.write_text(json.dumps(summary, indent=2, default=str))
    plots = save_plots(study, folder)
    if tracker is not None:
        _track(tracker, [spec_path, summary_path, json_path], plots, best.number, value)
        _track_verified(tracker, verified or [])
        if spec.tune.multi:
            track_front(tracker, summary["pareto_front"] or [])
    return StudyOutputs(folder, spec_path, summary_path, json_path, plots, best.number, value)


def _chosen_by(spec: AnySpec, verified: list[dict[str, Any]] | None) -> str:
    assert spec.tune is not None
    if spec.tune.multi:
        return "pareto_highest_return"
    return "held_out" if held_out_best(verified or [], spec.tune.directions[0]) else "searched"


def _track(tracker: Any, files: list[Path], plots: list[Path], best: int, value: float) -> None:
    for path in files:
        tracker.log_artifact(path, "tuning")
    for path in plots:
        tracker.log_artifact(path, "plots")
    tracker.log_metrics({"tune/best_value": value}, 0)
    tracker.set_tags({tag.BEST_TRIAL: str(best)})


def _track_verified(tracker: Any, verified: list[dict[str, Any]]) -> None:
    """The held-out results on the study run: searched vs held-out score per verified trial
    (metrics stepped by trial number) and the spread over held-out seeds."""
    for v in verified:
        if v["held_out_value"] is None:
            continue
        metrics = {
            "verify/searched_value": float(v["searched_value"]),
            "verify/held_out_value": float(v["held_out_value"]),
            "verify/held_out_min": v["min"],
            "verify/held_out_max": v["max"],
        }
        if v["ci95"]:
            metrics |= {"verify/ci95_low": v["ci95"][0], "verify/ci95_high": v["ci95"][1]}
        tracker.log_metrics(metrics, v["number"])

"""The comparison report as markdown: one table row per variant, then the failed runs."""

from __future__ import annotations

from ppo_platform.reports.compare_render import render_comparison
from ppo_platform.reports.stats import (
    ScoreWords,
    SeedRun,
    SweepReport,
    VariantSummary,
    final_return,
    series_mean,
    steps_to_threshold,
)
from ppo_platform.tracking import tags as tag


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if abs(value) < 1e-12:  # float noise, e.g. the std of identical returns
        value = 0.0
    return f"{value:.{digits}g}" if abs(value) < 0.01 and value != 0 else f"{value:,.{digits}f}"


def _steps_cell(summary: VariantSummary, threshold: float | None) -> str:
    if threshold is None:
        return "n/a (no threshold)"
    if not summary.steps_to_threshold:
        return "n/a"
    seeds = f"{summary.reached}/{len(summary.steps_to_threshold)} seeds"
    mean = summary.mean_steps_to_threshold
    return f"not reached ({seeds})" if mean is None else f"{mean:,.0f} ({seeds})"


def _alerts_cell(summary: VariantSummary) -> str:
    """Total alerts, then per signal: `29 (clip_fraction_low 20, kl_high 9)`."""
    if not summary.alerts_by_signal:
        return str(summary.alerts)
    signals = ", ".join(f"{name} {n}" for name, n in summary.alerts_by_signal.items())
    return f"{summary.alerts} ({signals})"


def _runs_table(runs: list[SeedRun], threshold: float | None, words: ScoreWords) -> list[str]:
    """The "Runs" section: one row per run, with the doctor's top cause."""
    lines = [
        "## Runs",
        "",
        f"| run | variant | seed | status | {words.score} | {words.steps} to threshold "
        "| mean KL | alerts | top cause |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        steps = steps_to_threshold(run.evals, threshold)
        lines.append(
            f"| {run.name} | {run.variant} | {run.seed} | {run.status} | "
            f"{_num(final_return(run.evals))} | {'-' if steps is None else f'{steps:,}'} | "
            f"{_num(series_mean(run.approx_kl), 3)} | {run.alerts} | {run.top_cause or '-'} |"
        )
    return lines


def render_markdown(report: SweepReport, parent_tags: dict[str, str]) -> str:
    threshold, words = report.threshold, report.words
    t_text = "n/a" if threshold is None else f"{threshold:g}"
    seeds = parent_tags.get(tag.SWEEP_SEEDS, "?")
    finished = sum(run.finished for run in report.runs)
    lines = [
        f"# Sweep report: {report.name}",
        "",
        f"Parent run `{report.parent_run_id}` · env `{report.env_id}` · seeds {seeds} · "
        f"{len(report.runs)} runs, {finished} finished · {words.curve} threshold {t_text}",
        "",
        f"| variant | runs ok | {words.score} mean ± std | min "
        f"| {words.steps} to {words.curve} ≥ {t_text} "
        "| stability (std, last 25%) | mean approx KL | mean post-update KL "
        "| max post-update KL | mean clip fraction | alerts |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for v in report.variants:
        final = "n/a" if v.final_mean is None else f"{_num(v.final_mean)} ± {_num(v.final_std)}"
        lines.append(
            f"| {v.variant} | {v.finished}/{v.runs} | {final} | {_num(v.final_min)} | "
            f"{_steps_cell(v, threshold)} | {_num(v.stability)} | {_num(v.mean_kl, 3)} | "
            f"{_num(v.mean_kl_post, 3)} | {_num(v.max_kl_post, 3)} | "
            f"{_num(v.mean_clip_fraction, 3)} | {_alerts_cell(v)} |"
        )
    lines += [
        "",
        f"{words.score.capitalize()}: last evaluation ({words.evaluation}) of each seed; std "
        f"over seeds (population). {words.steps.capitalize()}: first evaluation at or above "
        "the threshold, mean over the seeds that reached it. Stability: std of the "
        f"evaluation's {words.curve} over the last 25% of "
        "training, averaged over seeds. KL and clip fraction: mean per update (approx KL on "
        "each minibatch before its step; post-update KL: the rollout policy against the "
        "updated one, its max over every update of every seed). Alerts: diagnostics alerts, "
        "summed over seeds, per signal in brackets.",
        "",
    ]
    if report.comparison is not None:
        lines += [render_comparison(report.comparison, "Variants compared").rstrip(), ""]
    lines += _runs_table(report.runs, threshold, words)
    failed = [run for run in report.runs if not run.finished]
    if failed:
        lines += ["", "## Failed runs", ""]
        lines += [
            f"- `{run.name}` ({run.run_id}): {run.status}: {run.error or 'no error recorded'}"
            for run in failed
        ]
    lines += ["", f"![{words.curve} vs {words.steps}](returns.png)", ""]
    lines += ["![approx KL per update](kl.png)"]
    lines += ["", "![post-update KL and clip fraction per update](update_size.png)", ""]
    return "\n".join(lines)

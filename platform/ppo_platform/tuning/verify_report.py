"""The held-out verification and the study's totals, as summary data and markdown."""

from __future__ import annotations

from typing import Any


def study_totals(rows: list[dict[str, Any]], verified: list[dict[str, Any]]) -> dict[str, int]:
    """Env steps the whole study spent (search + held-out runs) and how many trials pruned."""
    searched = sum(int(row["timesteps"] or 0) for row in rows)
    held_out = sum(int(v.get("timesteps") or 0) for v in verified)
    return {
        "env_steps_total": searched + held_out,
        "env_steps_search": searched,
        "env_steps_held_out": held_out,
        "trials_pruned": sum(row["state"] == "PRUNED" for row in rows),
    }


def totals_line(rows: list[dict[str, Any]], verified: list[dict[str, Any]]) -> str:
    totals = study_totals(rows, verified)
    return (
        f"- env steps spent by the whole study: {totals['env_steps_total']} "
        f"({totals['env_steps_search']} searching, {totals['env_steps_held_out']} held-out); "
        f"trials pruned: {totals['trials_pruned']}"
    )


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}"


def verification_markdown(
    verified: list[dict[str, Any]], seeds: list[int], chosen: int | None
) -> list[str]:
    """A table of searched vs held-out score per verified trial, with the spread over seeds."""
    lines = [
        "## Held-out verification",
        "",
        f"The top {len(verified)} trial(s) by searched score re-ran on held-out seeds {seeds} "
        "(never used in the search), scored by the search's own aggregate. "
        "CI: 95% confidence interval of the mean over held-out seeds (Student's t).",
        "",
        "| trial | searched | held-out | per seed | min | max | 95% CI of mean | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in verified:
        per_seed = ", ".join(f"{x:.4g}" for x in v.get("seed_values") or [])
        ci = v.get("ci95")
        interval = f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "-"
        note = "**chosen**" if v["number"] == chosen else (v.get("error") or "")[:120]
        lines.append(
            f"| {v['number']} | {_num(v['searched_value'])} | {_num(v['held_out_value'])} | "
            f"{per_seed or '-'} | {_num(v.get('min'))} | {_num(v.get('max'))} | {interval} | "
            f"{note.replace('|', '/')} |"
        )
    if chosen is None:
        lines += ["", "No trial completed its held-out runs: best_spec.yaml is the searched best."]
    return [*lines, ""]


def held_out_best(verified: list[dict[str, Any]], direction: str) -> dict[str, Any] | None:
    """The verified trial with the best held-out score (ties: the better searched one, as
    `verified` is best searched first); None if none completed its held-out runs."""
    scored = [v for v in verified if v.get("held_out_value") is not None]
    if not scored:
        return None
    sign = 1.0 if direction == "maximize" else -1.0
    return max(scored, key=lambda v: sign * v["held_out_value"])

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


def _interval(value: Any, ci: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if not ci else f"{value:.4g} [{ci[0]:.4g}, {ci[1]:.4g}]"


def _solved(v: dict[str, Any]) -> str:
    solved = v.get("solved")
    if not solved:
        return "-"
    low, high = solved["ci95"]
    return f"{solved['solved']}/{solved['runs']} ({low:.0%}-{high:.0%})"


def verification_markdown(
    verified: list[dict[str, Any]],
    seeds: list[int],
    chosen: int | None,
    threshold: float | None = None,
) -> list[str]:
    """A table of searched vs held-out score per verified trial, with the spread over seeds
    in the statistics every comparison uses, then what the winner's numbers can back."""
    solves = "" if threshold is None else " Column solved: seeds scoring at least "
    solves += "" if threshold is None else f"{threshold:g}, with the exact 95% interval of "
    solves += "" if threshold is None else "the solve rate (Clopper-Pearson)."
    lines = [
        "## Held-out verification",
        "",
        f"The top {len(verified)} trial(s) by searched score re-ran on held-out seeds {seeds} "
        "(never used in the search), scored by the search's own aggregate. Brackets: "
        "stratified percentile-bootstrap 95% intervals over held-out seeds, inside the "
        "observed range (docs/guides/comparing-runs.md)." + solves,
        "",
        "| trial | searched | held-out | per seed | min | max | mean [95% CI] | "
        "IQM [95% CI] | solved | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for v in verified:
        per_seed = ", ".join(f"{x:.4g}" for x in v.get("seed_values") or [])
        note = "**chosen**" if v["number"] == chosen else (v.get("error") or "")[:120]
        lines.append(
            f"| {v['number']} | {_num(v['searched_value'])} | {_num(v['held_out_value'])} | "
            f"{per_seed or '-'} | {_num(v.get('min'))} | {_num(v.get('max'))} | "
            f"{_interval(v.get('mean'), v.get('ci95'))} | "
            f"{_interval(v.get('iqm'), v.get('iqm_ci95'))} | {_solved(v)} | "
            f"{note.replace('|', '/')} |"
        )
    if chosen is None:
        lines += ["", "No trial completed its held-out runs: best_spec.yaml is the searched best."]
        return [*lines, ""]
    return [*lines, "", *claim_lines(verified, chosen), ""]


def claim_lines(verified: list[dict[str, Any]], chosen: int) -> list[str]:
    """How the winner was chosen, what its held-out seeds predict for fresh seeds, and the
    verdict between it and every other verified trial (plainly, when they cannot be told
    apart)."""
    from ppo_platform.reports.statistics import compare_pair, seeds_warning

    scored = [v for v in verified if v.get("held_out_value") is not None]
    best = next(v for v in scored if v["number"] == chosen)
    n = len(best["seed_values"])
    if best.get("solved"):
        rate = best["solved"]
        low, high = rate["ci95"]
        lines = [
            f"**Chosen: trial {chosen}**, by the lower bound of the 95% interval of its held-out "
            f"solve rate: {rate['solved']} of {rate['runs']} held-out seeds reached "
            f"{best['solve_threshold']:g}. Predicted solve rate on fresh seeds: "
            f"**{rate['rate']:.0%}, 95% CI {low:.0%}-{high:.0%}** (Clopper-Pearson); "
            "more held-out seeds narrow it."
        ]
    else:
        ci = best.get("ci95")
        bound = "-" if not ci else f"[{ci[0]:.4g}, {ci[1]:.4g}]"
        lines = [
            f"**Chosen: trial {chosen}**, by the bound of the bootstrap 95% interval of its "
            f"held-out mean: {best['mean']:.4g} {bound} over {n} held-out seed(s)."
        ]
    warning = seeds_warning(f"trial {chosen}", n)
    lines += [] if warning is None else ["", f"Warning: {warning}"]
    for other in scored:
        if other["number"] == chosen:
            continue
        pair = compare_pair(
            f"trial {chosen}", best["seed_values"], f"trial {other['number']}", other["seed_values"]
        )
        low, high = pair.ci
        odds = f"P(trial {chosen} > trial {other['number']}) = "
        odds += f"{pair.probability_of_improvement:.2f} [{low:.2f}, {high:.2f}]"
        if pair.verdict == "indistinguishable":
            lines += [
                "",
                f"- Trials {chosen} and {other['number']} **cannot be told apart** on these "
                f"held-out seeds ({odds}: indistinguishable); the choice between them is not "
                "evidence that one is better.",
            ]
        else:
            lines += [
                "",
                f"- Trial {chosen} is **{pair.verdict}** than trial {other['number']} ({odds}).",
            ]
    return lines


def _bound(v: dict[str, Any], sign: float) -> tuple[float, float, float]:
    """What the winner is chosen by, larger is better: the lower bound of the solve rate
    (0 without a threshold), then the bound of the bootstrap interval of the held-out mean
    on the side that is worse (the held-out score itself with one seed), then that score."""
    solved = v.get("solved")
    ci = v.get("ci95")
    value = float(v["held_out_value"])
    mean_bound = value if not ci else float(ci[0] if sign > 0 else ci[1])
    return (float(solved["ci95"][0]) if solved else 0.0, sign * mean_bound, sign * value)


def held_out_best(verified: list[dict[str, Any]], direction: str) -> dict[str, Any] | None:
    """The verified trial with the best lower confidence bound (_bound; ties: the better
    searched one, as `verified` is best searched first); None if none completed its held-out
    runs."""
    scored = [v for v in verified if v.get("held_out_value") is not None]
    if not scored:
        return None
    sign = 1.0 if direction == "maximize" else -1.0
    return max(scored, key=lambda v: _bound(v, sign))

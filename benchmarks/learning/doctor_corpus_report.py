"""The doctor corpus's three rates and its results page (benchmarks/learning/doctor_corpus.py)."""

from __future__ import annotations

from typing import Any

from benchmarks.harness import header
from benchmarks.learning.doctor_corpus_cases import BASES, DROPPED, Base
from benchmarks.learning.doctor_corpus_split import (
    HELD_OUT_FAMILIES,
    PLANTING_NOTES,
    TUNING_FAMILIES,
)
from benchmarks.learning.doctor_corpus_stats import (
    calibration_lines,
    confusion_lines,
    held_out_rates,
    row_part,
)
from benchmarks.learning.faulty_envs import SCALE

THRESHOLDS = {
    "detection": ">= 90%",
    "false_alarms": "<= 1 of >= 20",
    "recovery": ">= 70%",
    "first_update_collapse": "every family",
}


def lag_updates(first_step: int | None, onset: int, base: Base, spec_batch: int) -> int | None:
    if first_step is None:
        return None
    if base.name == "lm":
        return max(0, first_step - 1)
    onset_global = onset * base.n_envs
    return max(0, -(-(first_step - onset_global) // spec_batch))


def recovered(row: dict, good_returns: dict[str, float | None]) -> bool | None:
    """90% of the known-good return above a random policy's, at the same budget (None: the
    known-good return is unknown). A reward-scaled env's return is read in the base's units."""
    base = BASES[row["base"]]
    good, fixed = good_returns.get(row["base"]), row.get("recovery_return")
    if good is None or fixed is None:
        return None if good is None else False
    fixed = fixed / SCALE if "FaultyRewardScale" in row.get("command", "") else fixed
    floor = base.random if base.random is not None else 0.0
    return bool(fixed - floor >= 0.9 * (good - floor))


def broken_row(kind: str, case: Any, seed: int, error: Exception) -> dict[str, Any]:
    name = f"{case.base}/{case.name}" if kind == "fault" else case.name
    row: dict[str, Any] = {"group": kind, "name": name, "seed": seed, "base": case.base}
    row.update(error=f"{type(error).__name__}: {error}", causes=[], run_id=None, command="-")
    row.update(detected=False, false_alarm=True, critical_alerts=0, wall_s=0, exit=1)
    if kind == "fault":
        row.update(fault=case.fault, planted=case.cause, fixable=case.fixable, top=None)
    return row


def share(hits: int, total: int) -> str:
    return f"{hits}/{total} ({hits / total:.0%})" if total else "0/0"


def rates(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Detection (planted cause first), false alarms (known-good with any cause or critical
    alert), recovery (patch-fixable faults whose patched re-run reaches 90%)."""
    faults = [r for r in rows if r["group"] == "fault"]
    good = [r for r in rows if r["group"] == "good"]
    fixable = [r for r in faults if r["fixable"] and r.get("recovered") is not None]
    unjudged = [r for r in faults if r["fixable"] and r.get("recovered") is None]
    detected = sum(1 for r in faults if r["detected"])
    alarms = sum(1 for r in good if r["false_alarm"])
    back = sum(1 for r in fixable if r.get("recovered"))
    lags = sorted(r["lag_updates"] for r in faults if r.get("lag_updates") is not None)
    return {
        "detection": share(detected, len(faults)),
        "detection_share": detected / len(faults) if faults else None,
        "lag_updates_median": lags[len(lags) // 2] if lags else None,
        "lag_updates_max": lags[-1] if lags else None,
        "false_alarms": f"{alarms} of {len(good)}",
        "false_alarm_count": alarms,
        "recovery": share(back, len(fixable)),
        "recovery_share": back / len(fixable) if fixable else None,
        "missed": [f"{r['name']} seed {r['seed']}" for r in faults if not r["detected"]],
        "recovery_not_judged": [f"{r['name']} seed {r['seed']}" for r in unjudged],
    }


def _fault_line(r: dict[str, Any]) -> str:
    recovered = {True: "yes", False: "no", None: "-"}[r.get("recovered")] if r["fixable"] else "n/a"
    fixed = r.get("recovery_return")
    fixed_text = f"{fixed:.1f}" if isinstance(fixed, float) else "-"
    returned = f"{r['return']:.1f}" if isinstance(r.get("return"), float) else "-"
    lag = r["lag_updates"] if r.get("lag_updates") is not None else "-"
    return (
        f"| {r['name']} | {row_part(r) or '-'} | {r['seed']} | {r['fault']} | `{r['planted']}` | "
        f"{', '.join(r['causes']) or 'none'} | {'yes' if r['detected'] else '**no**'} | {lag} | "
        f"{returned} | {fixed_text} | {recovered} |"
    )


def _good_line(r: dict[str, Any]) -> str:
    returned = f"{r['return']:.1f}" if isinstance(r.get("return"), float) else "-"
    base = BASES.get(r.get("base") or "")
    random = f"{base.random:g}" if base is not None and base.random is not None else "-"
    alarm = "**yes**" if r["false_alarm"] else "no"
    return (
        f"| {r['name']} | {row_part(r) or '-'} | {r['seed']} | {returned} | {random} | "
        f"{', '.join(r['causes']) or 'none'} | {r['critical_alerts']} | {alarm} | {r['wall_s']} |"
    )


def rate_lines(report: dict[str, Any]) -> list[str]:
    """The held-out part's rates (with intervals), its confusion matrix and calibration."""
    held = held_out_rates(report["runs"])
    return [
        "",
        f"The split is declared before fitting (benchmarks/learning/doctor_corpus_split.py): "
        f"the doctor's thresholds and rules were chosen on the **tuning part** (env families "
        f"{', '.join(TUNING_FAMILIES)}: CartPole-v1, Acrobot-v1); every rate below is on the "
        f"**held-out part** only (families {', '.join(HELD_OUT_FAMILIES)}). Intervals: exact "
        "binomial (Clopper-Pearson) 95%, `ppo_platform.reports.statistics.solve_rate`.",
        "",
        "| rate (held-out part) | measured | issue #47 asks |",
        "|---|---|---|",
        f"| detection (planted cause named first) | {held['detection']} | "
        f"{THRESHOLDS['detection']} |",
        f"| false alarms (known-good with any cause or critical alert) | {held['false_alarms']} "
        f"| {THRESHOLDS['false_alarms']} |",
        f"| recovery (patched re-run at 90% of known-good) | {held['recovery']} | "
        f"{THRESHOLDS['recovery']} |",
        f"| first-update collapse (lr 3.0) named `step_too_large` | "
        f"{held['first_update_collapse']} | {THRESHOLDS['first_update_collapse']} |",
        "",
        f"Not judged (too short to tell): {', '.join(held['not_judged']) or 'none'}.",
        "",
        "### Confusion matrix (held-out faults: planted cause x named first)",
        "",
        *confusion_lines(held["confusion"]),
        "",
        "### Calibration (held-out part: every run with a cause named first, faults and "
        "known-good; a cause on a known-good run is wrong)",
        "",
        *calibration_lines(held["calibration"]),
    ]


def sources_line(report: dict[str, Any]) -> str:
    """The commands whose rows the page holds, and the re-judging command if any."""
    entries = report.get("commands") or [{"command": report["command"], "date_utc": "-"}]
    commands = "; ".join(f"`{c['command']}` ({c['date_utc']} UTC)" for c in entries)
    rejudged = report.get("rejudged")
    return f"Rows from: {commands}" + (
        f"; the rows run in the --keep folder it names re-judged by {rejudged}."
        if rejudged
        else "."
    )


def render(report: dict[str, Any]) -> str:
    rates_ = report["rates"]
    lines = header("How often is the doctor right? (the fault corpus)", report)
    lines += ["", sources_line(report)]
    lines += [
        "",
        f"Budgets (env steps; LM: updates): {report['budgets']}. Wall {report['wall_s']} s; "
        f"load before: {report['machine']['uptime_before']}; after: {report['uptime_after_runs']}.",
        *rate_lines(report),
        "",
        f"Detection lag (updates from the fault's onset to the finding's first step, every row "
        f"on the page): median {rates_['lag_updates_median']}, max {rates_['lag_updates_max']}. "
        f"Missed: {', '.join(rates_['missed']) or 'none'}. Recovery not judged (no return to "
        f"compare): {', '.join(rates_['recovery_not_judged']) or 'none'}.",
    ]
    cost = report.get("cost")
    if cost:
        lines += [
            "",
            f"Doctor cost: `diagnose` on a stored CartPole run's {cost['updates']} updates: "
            f"median {cost['diagnose_ms'][0]} ms of thread CPU (min {cost['diagnose_ms'][1]}, "
            f"max {cost['diagnose_ms'][2]}, 20 calls) = {cost['ms_per_update']} ms per update, "
            "once at the run's end. There is no switch that turns the diagnosis off, so no "
            "whole-process on/off pair was measured.",
        ]
    lines += [
        "",
        "## Faults",
        "",
        "| run | part | seed | fault | planted | doctor's causes | named first | lag (updates) | "
        "return | patched return | recovered |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(_fault_line(r) for r in report["runs"] if r["group"] == "fault"),
        "",
        "Faults tried and dropped (no fault at this budget):",
        "",
        *(f"- {line}" for line in DROPPED),
        "",
        "Notes on planting (measured while the cases were chosen):",
        "",
        *(f"- {line}" for line in PLANTING_NOTES),
        "",
        "## Known-good set",
        "",
        "| config | part | seed | return | random policy | doctor's causes | critical alerts | "
        "false alarm | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
        *(_good_line(r) for r in report["runs"] if r["group"] == "good"),
        "",
        "## Commands",
        "",
        "`$WORK/specs/plan-ENV-N/spec.yaml` is `ppo-platform plan --env ENV --budget N`'s "
        "spec, `$WORK/specs/zoo-ENV-N.yaml` is `ppo-platform import-zoo "
        "tests/fixtures/zoo_ppo.yml ENV`'s; `--set budget.total_timesteps` sets the run's "
        "budget. A recovery run is `ppo-platform run` of the spec `ppo-platform doctor RUN_ID "
        "--write` writes.",
        "",
        *(f"- {r['name']} (seed {r['seed']}): `{r['command']}`" for r in report["runs"]),
        "",
    ]
    return "\n".join(lines)

"""The doctor corpus's held-out statistics: which part a row is on, the confusion matrix
(planted cause x named first), rates with exact binomial intervals (the platform's
`reports.statistics.solve_rate`) and the calibration of the confidence the doctor names."""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchmarks.learning.doctor_corpus_split import ALL_FAULTS, ALL_GOOD, part_of
from ppo_platform.reports.statistics import solve_rate

NOT_JUDGED = "not judged"
NONE = "none"
# Confidence bins [low, high): the last holds 0.8 and above (the ">= 0.8" claim).
BINS = ((0.0, 0.5), (0.5, 0.8), (0.8, 1.01))
CASES = {f"{f.base}/{f.name}": f for f in ALL_FAULTS} | {g.name: g for g in ALL_GOOD}


def row_part(row: dict[str, Any]) -> str | None:
    """The split part of a row: as recorded, else from today's case table (None: unknown)."""
    if row.get("part"):
        return str(row["part"])
    case = CASES.get(row["name"])
    return part_of(case) if case is not None else None


def named_first(row: dict[str, Any]) -> str:
    """What the doctor named first: a cause, `not judged` (too short to tell) or `none`."""
    if row.get("top"):
        return str(row["top"])
    return NOT_JUDGED if row.get("thin_evidence") else NONE


def interval(hits: int, total: int) -> str:
    """`hits/total (rate; 95% CI low-high)`, the exact (Clopper-Pearson) interval."""
    if total == 0:
        return "0/0"
    rate = solve_rate(hits, total)
    low, high = rate.ci
    return f"{hits}/{total} ({rate.rate:.0%}; 95% CI {low:.0%}-{high:.0%})"


def confusion(faults: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    """planted cause -> Counter of what was named first."""
    matrix: dict[str, Counter[str]] = {}
    for row in faults:
        matrix.setdefault(row["planted"], Counter())[named_first(row)] += 1
    return matrix


def calibration(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per confidence bin: how many runs had a cause named first with that confidence, and how
    many of those were right (a fault row naming its planted cause; any cause named on a
    known-good row is wrong)."""
    table = []
    for low, high in BINS:
        named = [r for r in rows if r.get("confidence") is not None]
        inside = [r for r in named if low <= r["confidence"] < high]
        right = sum(1 for r in inside if r["group"] == "fault" and r["top"] == r["planted"])
        table.append({"bin": (low, min(high, 1.0)), "named": len(inside), "right": right})
    return table


def held_out_rates(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Detection, false alarms and recovery on the held-out part, each with its interval."""
    held = [r for r in rows if row_part(r) == "heldout"]
    faults = [r for r in held if r["group"] == "fault"]
    good = [r for r in held if r["group"] == "good"]
    fixable = [r for r in faults if r.get("fixable") and r.get("recovered") is not None]
    collapse = [r for r in faults if r["name"].endswith("/lr_huge")]
    return {
        "detection": interval(sum(1 for r in faults if r["detected"]), len(faults)),
        "false_alarms": interval(sum(1 for r in good if r["false_alarm"]), len(good)),
        "recovery": interval(sum(1 for r in fixable if r.get("recovered")), len(fixable)),
        "first_update_collapse": interval(
            sum(1 for r in collapse if r["top"] == "step_too_large"), len(collapse)
        ),
        "not_judged": [
            f"{r['name']} seed {r['seed']}" for r in held if named_first(r) == NOT_JUDGED
        ],
        "confusion": confusion(faults),
        "calibration": calibration([*faults, *good]),
    }


def confusion_lines(matrix: dict[str, Counter[str]]) -> list[str]:
    named = sorted({n for counts in matrix.values() for n in counts})
    lines = [
        "| planted \\ named first | " + " | ".join(f"`{n}`" for n in named) + " |",
        "|---|" + "---|" * len(named),
    ]
    for planted in sorted(matrix):
        cells = [str(matrix[planted].get(n, "")) for n in named]
        cells = [f"**{c}**" if n == planted and c else c for n, c in zip(named, cells, strict=True)]
        lines.append(f"| `{planted}` | " + " | ".join(cells) + " |")
    return lines


def calibration_lines(table: list[dict[str, Any]]) -> list[str]:
    lines = ["| confidence | causes named first | right | observed accuracy |", "|---|---|---|---|"]
    for row in table:
        low, high = row["bin"]
        span = f"[{low:.1f}, {high:.1f}]" if high >= 1.0 else f"[{low:.1f}, {high:.1f})"
        lines.append(
            f"| {span} | {row['named']} | {row['right']} | {interval(row['right'], row['named'])} |"
        )
    return lines

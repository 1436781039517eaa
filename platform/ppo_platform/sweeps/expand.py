"""Sweep expansion: a spec's `sweep:` section -> grid points x seeds -> validated member specs.

Every member is validated before anything trains, so one refused grid point refuses the sweep.
A spec of either workload (gymnasium or `ppo_lm`) expands the same way: its members are specs of
its workload, validated by it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, replace
from typing import Any

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.spec.loader import set_dotted
from ppo_platform.spec.workloads import AnySpec, validate_any
from ppo_platform.tracking import tags as tag

# Set by the sweep itself for every member: a grid over them would be overwritten or nonsense.
RESERVED_PATHS = ("name", "budget.seed", "tracking.experiment", "sweep", "tune")
MAX_NAME = 100
MAX_SWEEP_RUNS = 1000  # a sweep is started without a prompt: larger ones are a mistake


@dataclass(frozen=True)
class GridPoint:
    """One variant: a value for every grid path, in the grid's order."""

    index: int
    values: tuple[tuple[str, Any], ...]

    @property
    def label(self) -> str:
        """`update.epochs=4, algorithm=ppo`; `(base spec)` for an empty grid."""
        return ", ".join(f"{path}={_text(value)}" for path, value in self.values) or "(base spec)"

    @property
    def slug(self) -> str:
        """Name part: `epochs4`, or the value alone for strings (`ppo_kl`)."""
        parts = []
        for path, value in self.values:
            tail = path.rsplit(".", 1)[-1]
            parts.append(value if isinstance(value, str) else f"{tail}{_text(value)}")
        return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))


@dataclass(frozen=True)
class SweepMember:
    """One run of the sweep: a grid point with one seed, as a full validated spec."""

    point: GridPoint
    seed: int
    spec: AnySpec

    @property
    def key(self) -> str:
        """Stable id of (grid point, seed): how a re-run finds the runs already finished."""
        return member_key(self.point, self.seed)

    @property
    def tags(self) -> dict[str, str]:
        tags = {
            tag.KIND: "sweep_member",
            tag.SWEEP_KEY: self.key,
            tag.GRID_POINT: self.point.label,
            tag.GRID_INDEX: str(self.point.index),
            tag.SEED: str(self.seed),
        }
        tags.update(
            {f"{tag.GRID_VALUE_PREFIX}{path}": _text(value) for path, value in self.point.values}
        )
        return tags


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, list):
        return "x".join(_text(v) for v in value)
    return str(value)


def member_key(point: GridPoint, seed: int) -> str:
    canonical = json.dumps(
        {"point": [list(pair) for pair in point.values], "seed": seed},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def sweep_hash(spec: AnySpec) -> str:
    """Same base spec, variants, grid and seeds -> same hash -> the same parent run (resume)."""
    assert spec.sweep is not None
    sweep = spec.sweep.model_dump(mode="json", include={"grid", "variants", "seeds"})
    canonical = json.dumps(
        {"spec": spec.spec_hash(), **sweep},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def grid_points(spec: AnySpec) -> list[GridPoint]:
    """Each variant (or the base spec) crossed with the grid, first path varying slowest."""
    assert spec.sweep is not None
    combos: list[tuple[tuple[str, Any], ...]] = [
        tuple(variant.items()) for variant in spec.sweep.variants
    ] or [()]
    for path, values in spec.sweep.grid.items():
        combos = [(*combo, (path, value)) for combo in combos for value in values]
    return [GridPoint(index, combo) for index, combo in enumerate(combos)]


def _reserved_issue(where: str, path: str) -> SpecIssue | None:
    if not any(path == r or path.startswith(r + ".") for r in RESERVED_PATHS):
        return None
    fix = "drop this path."
    if path == "budget.seed":
        fix = "list the seeds under sweep.seeds and drop this path."
    return SpecIssue(where, "cannot be swept: the sweep sets it for every run.", fix=fix)


def _grid_issues(spec: AnySpec) -> list[SpecIssue]:
    """Problems of the sweep section itself: reserved paths, duplicated values or seeds."""
    sweep = spec.sweep
    assert sweep is not None
    issues: list[SpecIssue | None] = []
    for path, values in sweep.grid.items():
        issues.append(_reserved_issue(f"sweep.grid.{path}", path))
        texts = [json.dumps(v, sort_keys=True) for v in values]
        if len(set(texts)) != len(texts):
            issues.append(
                SpecIssue(
                    f"sweep.grid.{path}",
                    "lists a value more than once.",
                    values,
                    fix="remove the duplicate value.",
                )
            )
    seen_variants: set[str] = set()
    for i, variant in enumerate(sweep.variants):
        for path in variant:
            issues.append(_reserved_issue(f"sweep.variants[{i}].{path}", path))
            if path in sweep.grid:
                issues.append(
                    SpecIssue(
                        f"sweep.variants[{i}].{path}",
                        "is also a grid path: the grid would overwrite it.",
                        fix="set it either in the variants or in the grid.",
                    )
                )
        text = json.dumps(variant, sort_keys=True)
        if text in seen_variants:
            issues.append(
                SpecIssue(
                    f"sweep.variants[{i}]",
                    "repeats an earlier variant.",
                    fix="remove the duplicate variant.",
                )
            )
        seen_variants.add(text)
    if len(set(sweep.seeds)) != len(sweep.seeds):
        issues.append(
            SpecIssue(
                "sweep.seeds",
                "lists a seed more than once.",
                sweep.seeds,
                fix="remove the duplicate seed.",
            )
        )
    return [issue for issue in issues if issue is not None]


def _member_name(base: str, point: GridPoint, seed: int) -> str:
    name = "-".join(part for part in (base, point.slug, f"s{seed}") if part)
    if len(name) > MAX_NAME:  # keep it a valid SafeName; the hash keeps it unique
        suffix = f"-{member_key(point, seed)[:8]}"
        name = name[: MAX_NAME - len(suffix)] + suffix
    return name


def sweep_size(spec: AnySpec) -> int:
    """Runs in the sweep (variants x grid x seeds), counted before anything is built."""
    assert spec.sweep is not None
    size = max(1, len(spec.sweep.variants)) * len(spec.sweep.seeds)
    for values in spec.sweep.grid.values():
        size *= len(values)
    return size


def _size_issues(spec: AnySpec) -> list[SpecIssue]:
    size = sweep_size(spec)
    if size <= MAX_SWEEP_RUNS:
        return []
    return [
        SpecIssue(
            "sweep",
            f"expands to {size} runs, over the limit of {MAX_SWEEP_RUNS}.",
            size,
            fix="sweep fewer values or seeds, or split it; for a large search use "
            "`ppo-platform tune` (it samples the space).",
        )
    ]


def expand_sweep(
    spec: AnySpec, source: str | None = None, *, from_outside: bool = False
) -> list[SweepMember]:
    """Grid x seeds -> validated member specs of the spec's workload. Raises SpecError naming
    every bad grid point. `from_outside` (the service): an LM member's paths must stay inside
    the LM folder, as the base spec's did."""
    if spec.sweep is None:
        raise SpecError(
            [
                SpecIssue(
                    "sweep",
                    "the spec has no sweep: section to expand.",
                    fix="add e.g. sweep: {grid: {update.epochs: [4, 10]}, seeds: [0, 1, 2]}",
                )
            ],
            source,
        )
    issues = _grid_issues(spec) or _size_issues(spec)
    if issues:
        raise SpecError(issues, source)
    # What the user wrote (not every default): rules that look at set fields see the same spec.
    base = spec.model_dump(
        mode="json", by_alias=True, exclude_unset=True, exclude={"sweep", "tune"}
    )
    members: list[SweepMember] = []
    seen: dict[tuple[str, str, str], SpecIssue] = {}
    for point in grid_points(spec):
        for seed in spec.sweep.seeds:
            data = copy.deepcopy(base)
            try:
                for path, value in point.values:
                    set_dotted(data, path, copy.deepcopy(value), source)
                data["name"] = _member_name(spec.name, point, seed)
                set_dotted(data, "budget.seed", seed)
                set_dotted(data, "tracking.experiment", spec.experiment_name)
                member = validate_any(data, source=source, from_outside=from_outside)
                members.append(SweepMember(point, seed, member))
            except SpecError as error:
                where = f"grid point {point.label}, seed {seed}"
                for issue in error.issues:
                    # One line per (point, rule): a point refused for every seed is named once.
                    key = (point.label, issue.path, issue.message)
                    if key not in seen:
                        seen[key] = replace(issue, message=f"{issue.message} [at {where}]")
    if seen:
        raise SpecError(list(seen.values()), source)
    return members

"""`compare`: score training runs from the store, group them, and compare the groups with
`reports.statistics` (docs/guides/comparing-runs.md).

A run's score is the latest value of `metric` (default: the final evaluation's mean return) of
each FINISHED training run; a sweep member run twice counts once (its finished attempt).
Groups: `variant` (the sweep's grid point, a study's trial, else the run's name), `spec` (the
spec hash: same config, any sweep) or `tag:KEY` (any tag's value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from ppo_platform.errors import BadInputError, SpecIssue
from ppo_platform.reports import statistics as st
from ppo_platform.reports.normalization import normalize_tasks
from ppo_platform.tracking import tags as tag

DEFAULT_METRIC = "eval/mean_reward"
GROUPINGS = ("variant", "spec", "tag:KEY")


@dataclass
class Comparison:
    metric: str
    groups: list[st.GroupSummary]
    pairs: list[st.PairVerdict]
    normalized: bool = False
    skipped: list[str] = field(default_factory=list)  # runs left out, and why

    @property
    def warnings(self) -> list[str]:
        return [group.warning for group in self.groups if group.warning]

    def to_json(self) -> dict[str, Any]:
        """`{"metric", "groups": [...], "pairs": [...]}` as `compare --json` writes it."""
        groups = []
        for group in self.groups:
            item = asdict(group)
            for key in ("iqm_ci", "mean_ci", "median_ci"):
                item[key] = list(item[key])
            if group.solve_rate is not None:
                item["solve_rate"] = {**asdict(group.solve_rate), "ci": list(group.solve_rate.ci)}
            groups.append(item)
        pairs = [{**asdict(pair), "ci": list(pair.ci)} for pair in self.pairs]
        return {
            "metric": self.metric,
            "normalized": self.normalized,
            "groups": groups,
            "pairs": pairs,
            "warnings": self.warnings,
            "skipped": self.skipped,
        }


def bad_input(field: str, value: object, message: str, fix: str) -> BadInputError:
    return BadInputError([SpecIssue(field, message, value, fix=fix)], field)


def check_grouping(by: str) -> str:
    """`by` if it is `variant`, `spec` or `tag:KEY`; BadInputError naming the fix."""
    if by in ("variant", "spec") or (by.startswith("tag:") and len(by) > 4):
        return by
    raise bad_input(
        "--by",
        by,
        "is not a grouping.",
        "use variant (the sweep's grid point or the study's trial), spec (the spec hash) or "
        "tag:KEY (a tag's value, e.g. tag:mlflow.runName).",
    )


def _variant(run: dict[str, Any], several_sources: bool) -> str:
    tags = run["tags"]
    name = tags.get(tag.GRID_POINT) or run["parent_name"] or tags.get(tag.RUN_NAME, run["run_id"])
    return f"{run['source']['name']}/{name}" if several_sources else name


def group_name(run: dict[str, Any], by: str, several_sources: bool) -> str | None:
    """The group a run falls in under `by` (None: the run lacks that tag)."""
    if by == "variant":
        return _variant(run, several_sources)
    if by == "spec":
        digest = run["tags"].get(tag.SPEC_HASH)
        return None if digest is None else f"spec {digest[:12]}"
    value = run["tags"].get(by.removeprefix("tag:"))
    return None if value is None else f"{by.removeprefix('tag:')}={value}"


def _latest_attempts(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One run per sweep member (its FINISHED run if any, else its latest); others as they are.
    A member is its key within its source: two sweeps of one grid keep their own members."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        member = run["tags"].get(tag.SWEEP_KEY)
        key = (run["source"]["run_id"], member) if member else ("", run["run_id"])
        rank = (run["status"] == "FINISHED", run["start_time"] or 0)
        held = best.get(key)
        if held is None or rank > (held["status"] == "FINISHED", held["start_time"] or 0):
            best[key] = run
    return list(best.values())


def _sources(runs: list[dict[str, Any]]) -> dict[str, int]:
    """Each source id's position in the order the ids were given."""
    return {
        source: i for i, source in enumerate(dict.fromkeys(r["source"]["run_id"] for r in runs))
    }


def _position(sources: dict[str, int], run: dict[str, Any]) -> tuple[int, int, str, int]:
    """Runs in the order a reader expects: by source, grid point or trial, then seed."""
    tags = run["tags"]
    index = tags.get(tag.GRID_INDEX) or tags.get(tag.TRIAL_NUMBER) or "0"
    seed = tags.get(tag.SEED, "0")
    number = int(index) if index.isdigit() else 0
    return (
        sources[run["source"]["run_id"]],
        number,
        run["parent_name"],
        int(seed) if seed.isdigit() else 0,
    )


def scored_groups(
    runs: list[dict[str, Any]], metric: str, by: str
) -> tuple[dict[str, dict[str, list[float]]], list[str]]:
    """Group -> env -> scores of the FINISHED runs with `metric`, and the runs left out."""
    several = len({run["source"]["run_id"] for run in runs}) > 1
    groups: dict[str, dict[str, list[float]]] = {}
    skipped = []
    for run in sorted(_latest_attempts(runs), key=partial(_position, _sources(runs))):
        name = run["tags"].get(tag.RUN_NAME, run["run_id"])
        group = group_name(run, by, several)
        if run["status"] != "FINISHED":
            skipped.append(f"{name} ({run['run_id']}): {run['status']}")
        elif not math.isfinite(run["metrics"].get(metric, math.nan)):
            skipped.append(f"{name} ({run['run_id']}): no finite {metric}")
        elif group is None:
            skipped.append(f"{name} ({run['run_id']}): no tag for --by {by}")
        else:
            env = run["tags"].get(tag.ENV_ID, "?")
            groups.setdefault(group, {}).setdefault(env, []).append(float(run["metrics"][metric]))
    return groups, skipped


def compare_scores(
    groups: dict[str, dict[str, list[float]]],
    metric: str = DEFAULT_METRIC,
    *,
    baseline: str | None = None,
    threshold: float | None = None,
    seed: int = 0,
    skipped: Sequence[str] = (),
) -> Comparison:
    """Summaries of every group and verdicts for every pair (or against `baseline`).

    Scores over several envs are normalised (`reports.normalization`) and the bootstrap is
    stratified by env; groups over different envs cannot be compared pairwise and get none.
    """
    if not groups:
        left_out = f" (left out: {'; '.join(skipped)})" if skipped else ""
        raise bad_input(
            "--metric",
            metric,
            f"no finished run has this metric to compare{left_out}.",
            "give ids of finished runs, sweeps or studies, or another --metric.",
        )
    envs = {env for per_env in groups.values() for env in per_env}
    normalized = len(envs) > 1
    tasks = {
        name: normalize_tasks(per_env) if normalized else per_env
        for name, per_env in groups.items()
    }
    try:
        names = list(tasks)
        pairs = st.comparison_pairs(names, baseline)
        summaries = [
            st.summarize_group(name, scores, threshold=None if normalized else threshold, seed=seed)
            for name, scores in tasks.items()
        ]
        verdicts = [
            st.compare_pair(a, tasks[a], b, tasks[b], seed=seed)
            for a, b in pairs
            if set(tasks[a]) == set(tasks[b])
        ]
    except ValueError as error:
        raise bad_input("--baseline", baseline, str(error), "name one of the groups.") from error
    return Comparison(metric, summaries, verdicts, normalized, list(skipped))


def _threshold(runs: list[dict[str, Any]], threshold: float | None) -> float | None:
    """The solve threshold: given, else the sweep's, else gymnasium's for a single env."""
    if threshold is not None:
        return threshold
    envs = {run["tags"].get(tag.ENV_ID) for run in runs}
    if len(envs) != 1 or None in envs:
        return None
    tagged = {run["tags"].get(tag.THRESHOLD) for run in runs} - {None, ""}
    if len(tagged) == 1:
        return float(tagged.pop())
    from ppo_platform.reports.stats import default_threshold

    return default_threshold(str(envs.pop()))


def compare_runs(
    run_ids: list[str],
    tracking_uri: str,
    *,
    metric: str = DEFAULT_METRIC,
    by: str = "variant",
    baseline: str | None = None,
    threshold: float | None = None,
    seed: int = 0,
) -> Comparison:
    """Read the runs under `run_ids` from the store and compare their groups."""
    from ppo_platform.tracking.compare_reads import compared_runs
    from ppo_platform.tracking.gateway import tracking_client

    check_grouping(by)
    runs = compared_runs(tracking_client(tracking_uri), run_ids)
    groups, skipped = scored_groups(runs, metric, by)
    return compare_scores(
        groups,
        metric,
        baseline=baseline,
        threshold=_threshold(runs, threshold),
        seed=seed,
        skipped=skipped,
    )

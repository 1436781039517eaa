"""Sweeps: a grid of variants x seeds, each a full validated spec, run in parallel processes.

`expand_sweep` turns a spec's `sweep:` section into member specs and validates every one of
them before anything trains, so one refused grid point refuses the whole sweep. `run_sweep`
records one MLflow parent run for the sweep and one child run per member, trains the members in
a `LocalExecutor`, skips members a previous (interrupted) attempt already finished, and ends
with the comparison report of `reports.py`.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from .errors import SpecError, SpecIssue
from .loader import dump_spec, set_dotted, validate_data
from .settings import Settings, get_settings
from .spec import ExperimentSpec

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

    from .reports import SweepReport
    from .runner import RunResult

TAG = "ppo_platform."
KIND_TAG, HASH_TAG, KEY_TAG = f"{TAG}kind", f"{TAG}sweep_hash", f"{TAG}sweep_key"
POINT_TAG, INDEX_TAG, SEED_TAG = f"{TAG}grid_point", f"{TAG}grid_index", f"{TAG}seed"
FAILURE_TAG, WORKER_PID_TAG = f"{TAG}failure", f"{TAG}worker_pid"
PARENT_TAG = "mlflow.parentRunId"
# Set by the sweep itself for every member: a grid over them would be overwritten or nonsense.
RESERVED_PATHS = ("name", "budget.seed", "tracking.experiment", "sweep", "tune")
MAX_NAME = 100
EventCallback = Callable[[str], None]


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
    spec: ExperimentSpec

    @property
    def key(self) -> str:
        """Stable id of (grid point, seed): how a re-run finds the runs already finished."""
        return member_key(self.point, self.seed)

    @property
    def tags(self) -> dict[str, str]:
        tags = {
            KIND_TAG: "sweep_member",
            KEY_TAG: self.key,
            POINT_TAG: self.point.label,
            INDEX_TAG: str(self.point.index),
            SEED_TAG: str(self.seed),
        }
        tags.update({f"{TAG}grid.{path}": _text(value) for path, value in self.point.values})
        return tags


@dataclass(frozen=True)
class MemberOutcome:
    """How one member ended in this invocation (or `skipped`: finished by an earlier one)."""

    member: SweepMember
    status: str  # FINISHED | FAILED | KILLED
    run_id: str | None = None
    final_eval_mean: float | None = None
    error: str | None = None
    seconds: float | None = None
    pid: int | None = None
    skipped: bool = False

    def line(self) -> str:
        name = self.member.spec.name
        if self.skipped:
            return f"{name}: already finished (run {self.run_id}), skipped"
        if self.error:
            return f"{name}: FAILED: {self.error}"
        score = "-" if self.final_eval_mean is None else f"{self.final_eval_mean:.2f}"
        secs = "" if self.seconds is None else f" in {self.seconds:.1f} s"
        return f"{name}: {self.status}, final eval return {score}{secs} (run {self.run_id})"


@dataclass
class SweepResult:
    parent_run_id: str
    outcomes: list[MemberOutcome]
    seconds: float
    resumed: bool = False
    report: SweepReport | None = field(default=None, repr=False)

    @property
    def failed(self) -> list[MemberOutcome]:
        return [o for o in self.outcomes if o.status != "FINISHED"]

    def summary(self) -> str:
        skipped = sum(o.skipped for o in self.outcomes)
        head = (
            f"sweep finished in {self.seconds:.1f} s: {len(self.outcomes)} runs, "
            f"{len(self.outcomes) - len(self.failed)} finished, {len(self.failed)} failed"
            + (f", {skipped} skipped (finished earlier)" if skipped else "")
            + f"; parent run {self.parent_run_id}"
        )
        return "\n".join([head, *(f"  failed: {o.line()}" for o in self.failed)])


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


def sweep_hash(spec: ExperimentSpec) -> str:
    """Same base spec, variants, grid and seeds -> same hash -> the same parent run (resume)."""
    assert spec.sweep is not None
    sweep = spec.sweep.model_dump(mode="json", include={"grid", "variants", "seeds"})
    canonical = json.dumps(
        {"spec": spec.spec_hash(), **sweep},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def grid_points(spec: ExperimentSpec) -> list[GridPoint]:
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


def _grid_issues(spec: ExperimentSpec) -> list[SpecIssue]:
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


def expand_sweep(spec: ExperimentSpec, source: str | None = None) -> list[SweepMember]:
    """Grid x seeds -> validated member specs. Raises SpecError naming every bad grid point."""
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
    issues = _grid_issues(spec)
    if issues:
        raise SpecError(issues, source)
    # What the user wrote (not every default): rules that look at set fields see the same spec.
    base = spec.model_dump(mode="json", exclude_unset=True, exclude={"sweep", "tune"})
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
                members.append(SweepMember(point, seed, validate_data(data, source=source)))
            except SpecError as error:
                where = f"grid point {point.label}, seed {seed}"
                for issue in error.issues:
                    # One line per (point, rule): a point refused for every seed is named once.
                    key = (point.label, issue.path, issue.message)
                    if key not in seen:
                        seen[key] = SpecIssue(
                            issue.path, f"{issue.message} [at {where}]", issue.value, fix=issue.fix
                        )
    if seen:
        raise SpecError(list(seen.values()), source)
    return members


# ---- MLflow bookkeeping (parent process) -------------------------------------------------


def _experiment_id(client: MlflowClient, name: str) -> str:
    from .tracking import ensure_experiment

    return ensure_experiment(client, name)


def search_all(client: MlflowClient, experiment_id: str, filter_string: str) -> list[Any]:
    """Every active run matching `filter_string` (all result pages)."""
    from .tracking import _retry

    runs: list[Any] = []
    token = None
    while True:
        page = _retry(
            partial(
                client.search_runs,
                [experiment_id],
                filter_string,
                max_results=1000,
                page_token=token,
            )
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def child_runs(client: MlflowClient, experiment_id: str, parent_run_id: str) -> list[Any]:
    return search_all(client, experiment_id, f"tags.`{PARENT_TAG}` = '{parent_run_id}'")


def open_parent_run(
    client: MlflowClient, spec: ExperimentSpec, members: list[SweepMember], threshold: float | None
) -> tuple[str, bool]:
    """Reuse the unfinished parent run of this exact sweep, or create one. -> (run_id, resumed)."""
    from .tracking import _retry

    assert spec.sweep is not None
    experiment_id = _experiment_id(client, spec.experiment_name)
    digest = sweep_hash(spec)
    earlier = search_all(
        client, experiment_id, f"tags.`{KIND_TAG}` = 'sweep' and tags.`{HASH_TAG}` = '{digest}'"
    )
    unfinished = sorted(
        (r for r in earlier if r.info.status != "FINISHED"),
        key=lambda r: r.info.start_time,
        reverse=True,
    )
    threshold_tag = {f"{TAG}threshold": "" if threshold is None else repr(threshold)}
    if unfinished:
        run_id = unfinished[0].info.run_id
        _retry(lambda: client.update_run(run_id, status="RUNNING"))
        for key, value in threshold_tag.items():
            _retry(partial(client.set_tag, run_id, key, value))
        return run_id, True
    tags = {
        "mlflow.runName": spec.name,
        KIND_TAG: "sweep",
        HASH_TAG: digest,
        f"{TAG}grid": json.dumps(spec.sweep.grid),
        f"{TAG}variants": json.dumps(spec.sweep.variants),
        f"{TAG}seeds": json.dumps(spec.sweep.seeds),
        f"{TAG}members": str(len(members)),
        f"{TAG}env_id": spec.env.id,
        f"{TAG}algorithm": spec.algorithm,
        f"{TAG}spec_hash": spec.spec_hash(),
        **threshold_tag,
    }
    run = _retry(lambda: client.create_run(experiment_id, tags=tags))
    _retry(lambda: client.log_text(run.info.run_id, dump_spec(spec), "sweep/spec.yaml"))
    return run.info.run_id, False


def _finished_runs(client: MlflowClient, experiment_id: str, parent_run_id: str) -> dict[str, Any]:
    """sweep_key -> a FINISHED child run; orphaned RUNNING children are marked KILLED."""
    from .tracking import _retry

    finished: dict[str, Any] = {}
    for run in child_runs(client, experiment_id, parent_run_id):
        key = run.data.tags.get(KEY_TAG)
        if run.info.status == "FINISHED" and key:
            finished[key] = run
        elif run.info.status == "RUNNING":  # its process died with the previous attempt
            _retry(partial(client.set_terminated, run.info.run_id, "KILLED"))
    return finished


# ---- The worker side ------------------------------------------------------------------------


def run_member(
    spec: ExperimentSpec, parent_run_id: str, tags: dict[str, str], settings: Settings
) -> RunResult:
    """Train one member in a worker process; a failure is recorded as a FAILED child run."""
    from .runner import run_spec

    started_ms = int(time.time() * 1000)
    tags = {**tags, WORKER_PID_TAG: str(os.getpid())}  # which process trained it
    try:
        return run_spec(spec, parent_run_id=parent_run_id, tags=tags, settings=settings)
    except Exception as error:
        record_failure(settings, spec, parent_run_id, tags, error, started_ms)
        raise


def record_failure(
    settings: Settings,
    spec: ExperimentSpec,
    parent_run_id: str,
    tags: dict[str, str],
    error: Exception,
    started_ms: int,
) -> None:
    """Make sure the member's child run exists and is FAILED with the error in a tag.

    The runner closes the runs it created as FAILED itself; a run that failed before the
    runner created one (an environment that cannot be built, say) gets a FAILED run here.
    """
    from mlflow.tracking import MlflowClient

    from .tracking import RunTracker, _retry

    client = MlflowClient(settings.tracking_uri)
    message = f"{type(error).__name__}: {error}"[:5000]
    experiment_id = _experiment_id(client, spec.experiment_name)
    mine = [
        run
        for run in child_runs(client, experiment_id, parent_run_id)
        if run.data.tags.get(KEY_TAG) == tags[KEY_TAG] and run.info.start_time >= started_ms
    ]
    if not mine:
        tracker = RunTracker.start(
            settings.tracking_uri, spec, parent_run_id=parent_run_id, tags=tags
        )
        tracker.set_tags({FAILURE_TAG: message, f"{TAG}outcome": "failed"})
        tracker.finish("FAILED")
        return
    for run in mine:
        if run.info.status == "RUNNING":
            run_id = run.info.run_id
            _retry(partial(client.set_tag, run_id, FAILURE_TAG, message))
            _retry(partial(client.set_terminated, run_id, "FAILED"))


# ---- Orchestration ---------------------------------------------------------------------------


def run_sweep(
    spec: ExperimentSpec,
    *,
    workers: int | None = None,
    settings: Settings | None = None,
    on_event: EventCallback | None = None,
    source: str | None = None,
    report: bool = True,
) -> SweepResult:
    """Validate every member, then train the unfinished ones in parallel under one parent run."""
    members = expand_sweep(spec, source)  # refuses before anything is created or trained

    from mlflow.tracking import MlflowClient

    from .executors import Task, TaskResult, default_workers, run_tasks
    from .reports import default_threshold
    from .tracking import _retry, ensure_experiment

    assert spec.sweep is not None
    settings = settings or get_settings()
    say = on_event or (lambda line: None)
    started = time.perf_counter()
    threshold = spec.sweep.threshold
    if threshold is None:
        threshold = default_threshold(spec.env.id)
    # The parent process creates the store and the parent run before any worker starts:
    # several processes creating one SQLite database at once race.
    client = MlflowClient(settings.tracking_uri)
    ensure_experiment(client, spec.experiment_name, settings.artifact_root)
    parent_run_id, resumed = open_parent_run(client, spec, members, threshold)
    experiment_id = _experiment_id(client, spec.experiment_name)
    finished = _finished_runs(client, experiment_id, parent_run_id) if resumed else {}
    outcomes: dict[str, MemberOutcome] = {}
    for member in members:
        run = finished.get(member.key)
        if run is not None:
            score = run.data.tags.get(f"{TAG}final_eval_mean_reward")
            outcomes[member.key] = MemberOutcome(
                member, "FINISHED", run.info.run_id, float(score) if score else None, skipped=True
            )
    todo = [m for m in members if m.key not in outcomes]
    n_workers = max(1, min(workers or default_workers(), len(todo) or 1))
    say(
        f"sweep {spec.name}: {len(members)} runs ({len(grid_points(spec))} variants x "
        f"{len(spec.sweep.seeds)} seeds), parent run {parent_run_id}"
        + (f" (resumed: {len(members) - len(todo)} already finished)" if resumed else "")
        + f"; {len(todo)} to train on {n_workers} worker(s)"
    )
    by_key = {m.key: m for m in members}

    def collect(result: TaskResult) -> None:
        outcome = _outcome(by_key[result.key], result)
        outcomes[result.key] = outcome
        done = sum(not o.skipped for o in outcomes.values())
        say(f"[{done}/{len(todo)}] {outcome.line()}")

    tasks = [Task(m.key, run_member, (m.spec, parent_run_id, m.tags, settings)) for m in todo]
    try:
        run_tasks(tasks, n_workers, torch_threads=settings.torch_threads, on_done=collect)
    except KeyboardInterrupt:
        _retry(lambda: client.set_terminated(parent_run_id, "KILLED"))
        raise
    ordered = [outcomes[m.key] for m in members]
    result = SweepResult(parent_run_id, ordered, time.perf_counter() - started, resumed)
    _fill_failed_run_ids(client, experiment_id, result)
    status = "FINISHED" if not result.failed else "FAILED"
    _retry(lambda: client.set_tag(parent_run_id, f"{TAG}failed_runs", str(len(result.failed))))
    try:
        if report:
            from .reports import build_report, publish_report

            result.report = build_report(
                client, parent_run_id, settings.runs_dir / parent_run_id / "report"
            )
            publish_report(client, result.report)
    finally:  # a report that cannot be built must not leave the parent RUNNING
        _retry(lambda: client.set_terminated(parent_run_id, status))
    return result


def _outcome(member: SweepMember, result: Any) -> MemberOutcome:
    if not result.ok:
        return MemberOutcome(
            member, "FAILED", error=result.error, seconds=result.seconds, pid=result.pid
        )
    run: RunResult = result.value
    error = None if run.status == "FINISHED" else (run.message or run.outcome)
    return MemberOutcome(
        member, run.status, run.run_id, run.final_eval_mean, error, run.seconds, result.pid
    )


def _fill_failed_run_ids(client: MlflowClient, experiment_id: str, result: SweepResult) -> None:
    """Failed members raised in the worker: find the FAILED child run recorded for each."""
    missing = [i for i, o in enumerate(result.outcomes) if o.run_id is None]
    if not missing:
        return
    latest: dict[str, Any] = {}
    for run in child_runs(client, experiment_id, result.parent_run_id):
        key = run.data.tags.get(KEY_TAG)
        if key and (key not in latest or run.info.start_time > latest[key].info.start_time):
            latest[key] = run
    for i in missing:
        outcome = result.outcomes[i]
        run = latest.get(outcome.member.key)
        if run is not None:
            result.outcomes[i] = dataclasses.replace(outcome, run_id=run.info.run_id)

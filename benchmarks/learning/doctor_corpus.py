"""How often is the doctor right? Faults planted in known-good specs, a known-good set, three rates.

Every run is a whole `ppo-platform run` process (its own PPO_PLATFORM_HOME per worker; env faults
from the operator env package benchmarks/learning/faulty_envs.py, `--env-package`), then the
doctor reads the stored run as `ppo-platform doctor RUN_ID` does (`diagnose_stored_run`):

- detection: the planted cause is named first; its lag = updates from the fault's onset to the
  finding's first step;
- false alarms: a known-good config with any cause or any critical alert;
- recovery: each patch-fixable fault is re-run with the spec `ppo-platform doctor RUN_ID
  --write` writes (the same `patched_spec`), at the same budget; it recovers when its final
  eval return reaches 90% of the known-good return above a random policy's;
- cost: the diagnosis timed in-process on the recorded metric series (`harness.measured`).

    python -m benchmarks.learning.doctor_corpus [--quick] [--seeds 0 1] [--only NAME ...]
        [--workers 2]
Writes benchmarks/results/doctor_corpus.{json,md} (with --only: merged into the previous rows).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    RESULTS,
    ROOT,
    ProcessFailed,
    command_line,
    machine,
    merge_previous,
    run_process,
    uptime,
    versions,
    write_results,
)
from benchmarks.learning.doctor_corpus_cases import BASES, LM_GOOD_SETS, Base
from benchmarks.learning.doctor_corpus_report import (
    broken_row,
    lag_updates,
    rates,
    recovered,
    render,
)
from benchmarks.learning.doctor_corpus_split import ALL_FAULTS, ALL_GOOD, family_of, part_of
from benchmarks.learning.doctor_corpus_tools import batch_of, cost_per_update

PACKAGE = "benchmarks.learning.faulty_envs"
CLI = str(Path(sys.executable).with_name("ppo-platform"))
RETURN = re.compile(r"final eval return (-?[0-9.]+)")


def child_env(home: Path) -> dict[str, str]:
    path = os.pathsep.join([str(ROOT / "platform"), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {
        **os.environ,
        "PPO_PLATFORM_HOME": str(home),
        "PYTHONPATH": path,
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }


def base_spec(source: str, what: str, budget: int, folder: Path, home: Path) -> Path:
    """The known-good spec file: as it is, or planned / imported now (kept in `folder`)."""
    if source == "file":
        return ROOT / what
    out = folder / f"{source}-{what}-{budget}"
    if source == "plan":
        command = [CLI, "plan", "--env", what, "--budget", str(budget), "--out", str(out)]
        spec = out / "spec.yaml"
    else:
        spec = out.with_suffix(".yaml")
        fixture = str(ROOT / "tests" / "fixtures" / "zoo_ppo.yml")
        command = [CLI, "import-zoo", fixture, what, "--out", str(spec)]
    if not spec.exists():
        subprocess.run([*command, "--force"], env=child_env(home), check=True, capture_output=True)
    return spec


def budget_sets(base: Base | None, budget: int) -> list[str]:
    field = "budget.updates" if base is not None and base.name == "lm" else "budget.total_timesteps"
    return [f"{field}={budget}"]


def train(spec: Path, sets: list[str], home: Path) -> dict[str, Any]:
    """One `ppo-platform run`: its run id, exit, wall, final eval return and closing lines."""
    runs = home / "runs"
    before = set(os.listdir(runs)) if runs.is_dir() else set()
    command = [CLI, "run", str(spec), "--quiet", "--env-package", PACKAGE]
    for item in sets:
        command += ["--set", item]
    try:
        sample = run_process(command, env=child_env(home), keep_stdout=True, keep_stderr=True)
        exit_code = 0
    except ProcessFailed as failed:
        sample, exit_code = failed.sample, 1
    new = sorted(set(os.listdir(runs)) - before) if runs.is_dir() else []
    text = sample.get("stdout", "") + sample.get("stderr", "")
    found = RETURN.search(text)
    lines = [line for line in text.splitlines() if line.strip()]
    return {
        "run_id": new[-1] if new else None,
        "exit": exit_code,
        "wall_s": round(sample["wall_s"], 1),
        "return": float(found.group(1)) if found else None,
        "closing": lines[-6:],
        "command": "ppo-platform " + " ".join(command[1:]),
    }


def diagnosis_of(run_id: str | None, home: Path, write: Path | None = None) -> dict[str, Any]:
    """The doctor's diagnosis of a stored run (and, with `write`, the patched spec it writes),
    plus the run's critical alerts."""
    from ppo_platform.doctor import patched_spec
    from ppo_platform.settings import Settings
    from ppo_platform.spec.loader import dump_spec
    from ppo_platform.training.diagnosis import diagnose_stored_run

    if run_id is None:
        return {"causes": [], "not_judged": [], "critical_alerts": 0, "error": "no run folder"}
    diagnosis, spec = diagnose_stored_run(run_id, Settings(home=home))
    out: dict[str, Any] = diagnosis.to_dict()
    alerts_file = home / "runs" / run_id / "alerts.json"
    alerts = json.loads(alerts_file.read_text())["alerts"] if alerts_file.exists() else []
    out["critical_alerts"] = sum(1 for a in alerts if a.get("severity") == "critical")
    top = diagnosis.top
    if write is not None and spec is not None and top is not None and top.patch:
        write.write_text(dump_spec(patched_spec(spec, top)), encoding="utf-8")
        out["written"] = str(write)
    return out


def fault_row(fault: Any, seed: int, budgets: dict[str, int], work: Path, home: Path) -> dict:
    """One planted fault, one seed: its run, the doctor's verdict, and the patched spec."""
    base = BASES[fault.base]
    spec = base_spec(base.source, base.what, base.budget, work / "specs", home)
    budget = fault.budget or budgets[base.name]
    sets = [*base.sets, *fault.sets, *budget_sets(base, budget), f"budget.seed={seed}"]
    if fault.env:
        sets.append(f"env.id={fault.env}")
    run = train(spec, sets, home)
    patched = work / "patched" / f"{fault.base}-{fault.name}-{seed}.yaml"
    patched.parent.mkdir(parents=True, exist_ok=True)
    verdict = diagnosis_of(run["run_id"], home, patched if fault.fixable else None)
    causes = verdict["causes"]
    top = causes[0] if causes else None
    named = top is not None and top["cause"] == fault.cause
    batch = 1 if base.name == "lm" else batch_of(spec, sets)
    lag = lag_updates(top["first_step"], fault.onset, base, batch) if named and top else None
    return {
        "group": "fault",
        "name": f"{fault.base}/{fault.name}",
        "seed": seed,
        "part": part_of(fault),
        "family": family_of(fault),
        "confidence": top["confidence"] if top else None,
        "thin_evidence": verdict.get("thin_evidence"),
        "fault": fault.fault,
        "planted": fault.cause,
        "fixable": fault.fixable,
        "top": top["cause"] if top else None,
        "causes": [f"{c['cause']} ({c['confidence']:.0%})" for c in causes],
        "advice": top["advice"] if top else None,
        "patch": top.get("patch") if top else None,
        "detected": named,
        "lag_updates": lag,
        "patched_spec": verdict.get("written"),
        "base": fault.base,
        **run,
    }


def good_row(good: Any, seed: int, budgets: dict[str, int], work: Path, home: Path) -> dict:
    """One known-good config: its run, and any cause or critical alert (a false alarm)."""
    base = BASES[good.base] if good.base else None
    if base is not None:
        spec = base_spec(base.source, base.what, base.budget, work / "specs", home)
        sets = [*base.sets, *budget_sets(base, good.budget or budgets[base.name])]
        sets += [*LM_GOOD_SETS, *good.sets] if base.name == "lm" else list(good.sets)
    else:
        spec = base_spec(good.source, good.what, good.budget, work / "specs", home)
        sets = budget_sets(None, good.quick if budgets.get("quick") else good.budget)
    run = train(spec, [*sets, f"budget.seed={good.seed}"], home)
    verdict = diagnosis_of(run["run_id"], home)
    causes = [f"{c['cause']} ({c['confidence']:.0%})" for c in verdict["causes"]]
    top = verdict["causes"][0] if verdict["causes"] else None
    return {
        "group": "good",
        "name": good.name,
        "seed": good.seed,
        "part": part_of(good),
        "family": family_of(good),
        "top": top["cause"] if top else None,
        "confidence": top["confidence"] if top else None,
        "thin_evidence": verdict.get("thin_evidence"),
        "base": good.base,
        "causes": causes,
        "critical_alerts": verdict["critical_alerts"],
        "false_alarm": bool(causes) or verdict["critical_alerts"] > 0 or run["exit"] != 0,
        **run,
    }


def recovery_row(row: dict, home: Path) -> dict:
    """The fault re-run with the doctor's patched spec (its budget and seed are the fault's)."""
    if not row.get("patched_spec"):
        return {"recovered": False, "why": "no patch written (top cause has none)"}
    run = train(Path(row["patched_spec"]), [], home)
    return {
        "recovery_return": run["return"],
        "recovery_command": run["command"],
        **{"recovery_exit": run["exit"], "recovery_wall_s": run["wall_s"]},
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="each base's smaller budget")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="seeds of faults")
    parser.add_argument("--only", nargs="+", default=[], help="rows whose name holds any of these")
    parser.add_argument("--workers", type=int, default=2, help="runs side by side")
    parser.add_argument(
        "--part", choices=("heldout", "tuning", "all"), default="heldout", help="split part"
    )
    parser.add_argument("--skip-good", action="store_true", help="faults only (no false alarms)")
    parser.add_argument("--keep", type=Path, help="keep the runs' homes here (default: temp)")
    parser.add_argument("--stem", default="doctor_corpus", help="results file stem")
    parser.add_argument(
        "--merge", type=Path, help="run nothing: merge this result's rows into --stem's"
    )
    return parser.parse_args()


def case_names() -> set[str]:
    """The rows' names of today's case table (a merged result drops rows no longer in it)."""
    return {f"{f.base}/{f.name}" for f in ALL_FAULTS} | {g.name for g in ALL_GOOD}


def wanted(case: Any, name: str, args: argparse.Namespace) -> bool:
    if args.part != "all" and part_of(case) != args.part:
        return False
    return not args.only or any(part in name for part in args.only)


def run_all(args: argparse.Namespace, work: Path) -> list[dict]:
    """Every selected row, `args.workers` at a time (each worker its own home)."""
    budgets: dict[str, int] = {n: (b.quick if args.quick else b.budget) for n, b in BASES.items()}
    budgets["quick"] = int(args.quick)
    jobs: list[tuple[str, Any, int]] = [
        ("fault", f, s)
        for f in ALL_FAULTS
        for s in args.seeds
        if wanted(f, f"{f.base}/{f.name}", args)
    ]
    if not args.skip_good:
        jobs += [("good", g, g.seed) for g in ALL_GOOD if wanted(g, g.name, args)]
    homes = [work / f"home{i}" for i in range(args.workers)]
    ensure_lm_demo(homes, jobs)

    free: queue.Queue[Path] = queue.Queue()
    for home in homes:
        free.put(home)

    def one(index: int) -> dict:
        kind, case, seed = jobs[index]
        home = free.get()  # a home is one worker's at a time: its new run folder is this run's
        try:
            row = (fault_row if kind == "fault" else good_row)(case, seed, budgets, work, home)
            if kind == "fault" and case.fixable:
                row.update(recovery_row(row, home))
        except Exception as error:  # one broken row is reported, not the whole corpus lost
            row = broken_row(kind, case, seed, error)
        finally:
            free.put(home)
        row["home"] = home.name
        print(
            f"[{time.strftime('%H:%M:%S')}] {kind} {row['name']} seed {seed}: "
            f"{row.get('top') or row.get('causes')}",
            flush=True,
        )
        return row

    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        return list(pool.map(one, range(len(jobs))))


def ensure_lm_demo(homes: list[Path], jobs: list[tuple[str, Any, int]]) -> None:
    """`ppo-platform lm init-demo` once, into the LM folder every home shares
    (PPO_PLATFORM_LM_DIR, set by main)."""
    needs = any((getattr(case, "base", None) == "lm") for _, case, _ in jobs)
    lm_dir = Path(os.environ["PPO_PLATFORM_LM_DIR"])
    if needs and not (lm_dir / "arithmetic").exists():
        homes[0].mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [CLI, "lm", "init-demo"], env=child_env(homes[0]), check=True, capture_output=True
        )


def finish(report: dict[str, Any], stem: str) -> None:
    """Judge recovery against the known-good returns, count the rates, write the page."""
    rows = [r for r in report["runs"] if r["name"] in case_names()]
    good_returns = {
        r["base"]: r["return"] for r in rows if r["name"] == f"{r['base']} (the faults' base)"
    }
    for row in rows:
        if row["group"] == "fault" and row["fixable"]:
            row["recovered"] = recovered(row, good_returns)
    report["runs"] = rows
    report["rates"] = rates(rows)
    write_results(report, stem, render)


def merge_only(extra: Path, stem: str) -> None:
    """`--merge FILE`: FILE's rows (another command's) replace or join --stem's; re-judged."""
    added = json.loads(extra.read_text())
    key = ("group", "name", "seed")
    redone = [tuple(r[k] for k in key) for r in added["runs"]]
    merged = merge_previous(added, RESULTS / f"{stem}.json", redone, key)
    merged["runs"] = [*merged["runs"], *added["runs"]]  # the kept rows, then the new ones
    merged["commands"] = [
        c for i, c in enumerate(merged["commands"]) if c not in merged["commands"][:i]
    ]
    main_report = json.loads((RESULTS / f"{stem}.json").read_text())
    for field in (
        "machine",
        "versions",
        "budgets",
        "wall_s",
        "cost",
        "command",
        "uptime_after_runs",
        "rejudged",
    ):
        if field in main_report:
            merged[field] = main_report[field]
    finish(merged, stem)


def main() -> None:
    args = parse_args()
    if args.merge:
        merge_only(args.merge, args.stem)
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="doctor-corpus-"))
    # One LM folder for every home and for this process (the doctor's patch validates there).
    os.environ["PPO_PLATFORM_LM_DIR"] = str(work / "lm")
    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": command_line("benchmarks.learning.doctor_corpus"),
        "machine": machine(),
        "versions": versions(),
        "budgets": {n: (b.quick if args.quick else b.budget) for n, b in BASES.items()},
    }
    rows = run_all(args, work)
    report["runs"] = rows
    report["uptime_after_runs"] = uptime()
    report["wall_s"] = round(time.perf_counter() - started, 1)
    timed_row = next((r for r in rows if r["group"] == "good" and r["base"] == "cartpole"), None)
    if timed_row is not None and timed_row["run_id"]:
        report["cost"] = cost_per_update(work / timed_row["home"], timed_row["run_id"])
    for row in rows:  # the commands name the specs under the work folder as $WORK/...
        for name in ("command", "recovery_command", "patched_spec"):
            if isinstance(row.get(name), str):
                row[name] = row[name].replace(str(work), "$WORK").replace(f"{ROOT}/", "")
    previous = RESULTS / f"{args.stem}.json"
    if args.only and previous.exists():
        key = ("group", "name", "seed")
        report = merge_previous(report, previous, [tuple(r[k] for k in key) for r in rows], key)
        report["runs"] = [*report["runs"], *rows]  # the kept rows, then the re-run ones
    finish(report, args.stem)
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

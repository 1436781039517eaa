"""The workload registry: every `algorithm` a spec can name, and the one way to load, validate,
plan and run it (`WORKLOADS`, `run_experiment`). The CLI, the job worker, sweeps and tuning
call these; nothing else picks a trainer by the kind of spec."""

from ppo_platform.workloads.registry import (
    WORKLOADS,
    Workload,
    load_experiment,
    run_experiment,
    workload_of,
)

__all__ = ["WORKLOADS", "Workload", "load_experiment", "run_experiment", "workload_of"]

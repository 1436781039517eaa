"""Optuna hyperparameter search over a spec (`ppo-platform tune`).

Modules by role: `space` (search space -> distributions, refusals), `objective` (trial ->
spec -> training, multi-seed score, pruning), `study` (storage, resume, stale trials),
`workers` (parallel processes), `runs` (MLflow parent/child runs), `board` (terminal progress),
`outputs` (best_spec.yaml, summary, plots), `auto_space` (`--space auto`), `tuner` (run_study).

Importing this package loads neither optuna nor MLflow (the API checks tune specs with it);
running a study loads both.
"""

from ppo_platform.tuning.auto_space import auto_space, with_auto_space
from ppo_platform.tuning.errors import TrialFailed, TuningError
from ppo_platform.tuning.space import check_space
from ppo_platform.tuning.tuner import TuneResult, run_study

__all__ = [
    "TrialFailed",
    "TuneResult",
    "TuningError",
    "auto_space",
    "check_space",
    "run_study",
    "with_auto_space",
]

"""Every MLflow tag name the platform reads or writes, in one place.

MLflow's own system tags are spelled as in `mlflow.utils.mlflow_tags` (a test pins them), so
that reading a tag name does not import MLflow (seconds, in the API validating a sweep); ours
share one prefix.
"""

from __future__ import annotations

from ppo_platform.spec.names import RESERVED_TAG_PREFIXES

PREFIX = "ppo_platform."
RUN_NAME = "mlflow.runName"
PARENT_RUN_ID = "mlflow.parentRunId"

# Every run
SPEC_HASH = f"{PREFIX}spec_hash"
ALGORITHM = f"{PREFIX}algorithm"
ENV_ID = f"{PREFIX}env_id"
# the return the env's registry declares solved, read where the run registered its env
SOLVED_RETURN = f"{PREFIX}env.reward_threshold"
OUTCOME = f"{PREFIX}outcome"
FINAL_EVAL_MEAN = f"{PREFIX}final_eval_mean_reward"
JOB_ID = f"{PREFIX}job_id"  # the job service's experiment that started the run
JOB_OWNER = f"{PREFIX}job_owner"  # the API key's owner of that experiment
PROCESS = f"{PREFIX}process"  # host:pid:start of the process that owns a RUNNING run
RUN_DIR = f"{PREFIX}run_dir"  # the run's folder, recorded when the platform creates it
ALERTS_TOTAL = f"{PREFIX}alerts_total"
STOP_REASON = f"{PREFIX}stop_reason"  # why a run stopped early (cancelled, drift alert)
RESUMED_FROM_STEP = f"{PREFIX}resumed_from_step"
# "on", or "off (why)": whether the trainer's fast paths ran (docs/guides/fast-paths.md)
FAST_PATHS = f"{PREFIX}fast_paths"
TRAINING_PATH = f"{PREFIX}training_path"  # torch or compiled (training/compiled_path.py)

# A spec's own tags (tracking.tags, not reserved) that the platform writes into specs it makes
IMPORTED_FROM = "imported_from"  # import-zoo: "rl-baselines3-zoo ppo.yml"
IMPORTED_ENTRY = "imported_entry"  # import-zoo: the file's entry, i.e. the env id

# Sweeps: the parent run and its members
KIND = f"{PREFIX}kind"
SWEEP_HASH = f"{PREFIX}sweep_hash"
SWEEP_KEY = f"{PREFIX}sweep_key"
GRID_POINT = f"{PREFIX}grid_point"
GRID_INDEX = f"{PREFIX}grid_index"
GRID_VALUE_PREFIX = f"{PREFIX}grid."
SEED = f"{PREFIX}seed"
FAILURE = f"{PREFIX}failure"
# A failure as data, each field apart (the doctor reads them: doctor/facts.py spells the same
# names; docs/guides/your-own-environment.md): who failed (`env`, `trainer`), what kind of fault
# (`env_crash`: the env raised; `non_finite_observation` / `non_finite_reward`), the exception's
# (qualified) type and message, the env, the run's env steps when it happened, the element index
# of a non-finite observation, and the saved traceback.
FAILURE_SOURCE = f"{PREFIX}failure.source"
FAILURE_KIND = f"{PREFIX}failure.kind"
FAILURE_TYPE = f"{PREFIX}failure.exception_type"
FAILURE_MESSAGE = f"{PREFIX}failure.exception_message"
FAILURE_ENV_ID = f"{PREFIX}failure.env_id"
FAILURE_STEP = f"{PREFIX}failure.step"
FAILURE_INDEX = f"{PREFIX}failure.index"
FAILURE_TRACEBACK = f"{PREFIX}failure.traceback"
TOP_CAUSE = f"{PREFIX}top_cause"  # the doctor's most likely cause at the run's end ("" none)
WORKER_PID = f"{PREFIX}worker_pid"
THRESHOLD = f"{PREFIX}threshold"
FAILED_RUNS = f"{PREFIX}failed_runs"
SWEEP_GRID = f"{PREFIX}grid"
SWEEP_VARIANTS = f"{PREFIX}variants"
SWEEP_SEEDS = f"{PREFIX}seeds"
SWEEP_MEMBERS = f"{PREFIX}members"

# Tuning: the study run, its trial runs and their seeds' runs
STUDY = f"{PREFIX}study"
STORAGE = f"{PREFIX}storage"
BEST_TRIAL = f"{PREFIX}best_trial"
TRIAL_NUMBER = f"{PREFIX}trial_number"
TUNED_PARAMS = f"{PREFIX}tuned_params"
TRIAL_STATE = f"{PREFIX}trial_state"
TRIAL_REASON = f"{PREFIX}reason"


def is_reserved(key: str) -> bool:
    """Tags a spec's `tracking.tags` may not set: MLflow's and the platform's own."""
    return key.startswith(RESERVED_TAG_PREFIXES)

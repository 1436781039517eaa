"""Drives the REST API with a client that openapi-python-client generated from the live
/openapi.json: validate -> submit (a typed spec, sent as JSON) -> status -> metrics -> cancel.

Run by test_generated_client.py in the generator's own venv (nothing of this project is
importable there): `python drive.py SERVER_URL API_KEY`. Every answer is checked to be the
generated model the document promises (no dict anywhere); the findings are printed as JSON.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time

from ppo_platform_client import AuthenticatedClient
from ppo_platform_client.api.events import get_metric_history, list_metrics
from ppo_platform_client.api.experiments import (
    cancel_experiment,
    get_experiment,
    submit_experiment,
)
from ppo_platform_client.api.specs import validate_spec
from ppo_platform_client.models import (
    BudgetSpec,
    EnvSpec,
    ErrorPublic,
    EvaluationSpec,
    ExperimentPublic,
    ExperimentSpec,
    ExperimentStatus,
    MetricHistory,
    MetricList,
    RolloutSpec,
    RunProgress,
    UpdateSpec,
    ValidationPublic,
)

TIMEOUT = 180.0


def experiment(client: AuthenticatedClient, experiment_id: str) -> ExperimentPublic:
    job = get_experiment.sync(experiment_id, client=client)
    assert isinstance(job, ExperimentPublic), job
    return job


def until(check, what: str):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def main(url: str, key: str) -> None:
    client = AuthenticatedClient(base_url=url, token=key, raise_on_unexpected_status=True)
    spec = ExperimentSpec(
        name="generated-client",
        env=EnvSpec(id="ppo_platform/GridWorld-v0", n_envs=1),
        rollout=RolloutSpec(n_steps=64),
        update=UpdateSpec(epochs=2, minibatch_size=64),
        budget=BudgetSpec(total_timesteps=2_000_000),
        evaluation=EvaluationSpec(every_timesteps=0, episodes=2),
    )
    checked = validate_spec.sync(client=client, body=spec)
    assert isinstance(checked, ValidationPublic), checked
    assert isinstance(checked.spec, ExperimentSpec)

    submitted = submit_experiment.sync(client=client, body=spec)
    assert isinstance(submitted, ExperimentPublic), submitted
    job_id = submitted.id

    def training() -> ExperimentPublic | None:
        job = experiment(client, job_id)
        progress = job.progress
        moving = isinstance(progress, RunProgress) and progress.timesteps > 0
        return job if moving and job.mlflow_run_id else None

    running = until(training, "the run to train")

    def logged() -> MetricList | None:
        metrics = list_metrics.sync(job_id, client=client)
        assert isinstance(metrics, MetricList), metrics
        return metrics if "train/approx_kl" in metrics.keys else None

    metrics = until(logged, "train/approx_kl to be logged")
    history = get_metric_history.sync(job_id, client=client, key="train/approx_kl")
    assert isinstance(history, MetricHistory), history
    unknown = get_metric_history.sync(job_id, client=client, key="train/no_such_metric")
    assert isinstance(unknown, ErrorPublic), unknown

    cancelled = cancel_experiment.sync(job_id, client=client)
    assert isinstance(cancelled, ExperimentPublic), cancelled
    final = until(
        lambda: (job := experiment(client, job_id)).status == ExperimentStatus.CANCELLED and job,
        "the run to stop",
    )
    moments: list[dt.datetime] = [submitted.created_at, running.created_at]
    print(
        json.dumps(
            {
                "validated_name": checked.name,
                "validated_kind": checked.kind.value,
                "submitted_status": submitted.status.value,
                "running_status": running.status.value,
                "timesteps": running.progress.timesteps,
                "metric_keys": metrics.keys,
                "history_key": history.key,
                "history_points": len(history.points),
                "history_first_step": history.points[0].step if history.points else None,
                "unknown_metric_type": unknown.type_,
                "cancel_requested": cancelled.cancel_requested,
                "final_status": final.status.value,
                "final_result_outcome": getattr(final.result, "outcome", None),
                "created_at_offsets": [m.utcoffset().total_seconds() for m in moments],
                "created_at_equal": submitted.created_at == running.created_at,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

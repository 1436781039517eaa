"""A sweep on the compiled path: each grid point's seeds train together in one worker process
(one compiled program), each seed still a member run of its own under the sweep's parent,
tagged as the member it is; a rerun after an interruption trains only what did not finish.
Real worker processes, a real MLflow store."""

from __future__ import annotations

from collections import defaultdict

import pytest
from mlflow.tracking import MlflowClient

from ppo_platform.errors import SpecError
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.sweeps import expand_sweep, run_sweep
from ppo_platform.sweeps.batches import member_tasks, run_batch
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.queries import child_runs

SWEEP = """\
name: compiled-sweep
env: {id: CartPole-v1, n_envs: 4}
compiled: 'on'
rollout: {n_steps: 32}
update: {epochs: 4, minibatch_size: 64, learning_rate: 1.0e-3}
budget: {total_timesteps: 768}
evaluation: {every_timesteps: 384, episodes: 2}
checkpoints: {every_timesteps: 0}
sweep: {grid: {update.epochs: [1, 4]}, seeds: [0, 1, 2]}
"""


def _children(parent_run_id: str) -> list:
    client = MlflowClient(get_settings().tracking_uri)
    parent = client.get_run(parent_run_id)
    return child_runs(client, parent.info.experiment_id, parent_run_id)


def test_a_compiled_points_seeds_are_one_task_and_a_torch_points_each_its_own(platform_home):
    compiled = expand_sweep(load_spec_text(SWEEP, "s.yaml"))
    tasks = member_tasks(compiled, "parent", {}, get_settings(), lambda m: None)
    assert [t.key for t in tasks] == ["batch:0", "batch:1"]
    assert all(t.fn is run_batch for t in tasks)
    assert [[seed for _, seed, _, _ in t.args[0]] for t in tasks] == [[0, 1, 2], [0, 1, 2]]
    assert [key for key, *_ in tasks[0].args[0]] == [m.key for m in compiled[:3]]
    torch = expand_sweep(load_spec_text(SWEEP.replace("'on'", "'off'"), "s.yaml"))
    lone = member_tasks(torch, "parent", {}, get_settings(), lambda m: m)
    assert lone == torch  # one task per member, as `one` builds it
    # A point with a single seed left (a rerun) is a lone member too.
    assert member_tasks(compiled[:1], "parent", {}, get_settings(), lambda m: m) == compiled[:1]


@pytest.mark.slow
def test_each_points_seeds_train_together_each_a_member_run(platform_home):
    spec = load_spec_text(SWEEP, "s.yaml")
    result = run_sweep(spec, workers=2, report=False)
    assert [o.status for o in result.outcomes] == ["FINISHED"] * 6
    runs = _children(result.parent_run_id)
    assert len(runs) == 6
    by_key = {run.data.tags[tag.SWEEP_KEY]: run for run in runs}
    assert set(by_key) == {o.member.key for o in result.outcomes}
    pids: dict[str, set[str]] = defaultdict(set)
    for outcome in result.outcomes:
        run = by_key[outcome.member.key]
        assert run.info.run_id == outcome.run_id
        assert run.info.status == "FINISHED"
        assert run.data.tags[tag.TRAINING_PATH] == "compiled"
        assert run.data.tags[tag.KIND] == "sweep_member"
        assert run.data.tags[tag.SEED] == str(outcome.member.seed)
        assert run.data.tags[tag.RUN_NAME] == outcome.member.spec.name
        assert run.data.params["update.epochs"] == str(outcome.member.spec.update.epochs)
        assert run.data.params["budget.seed"] == str(outcome.member.seed)
        assert outcome.final_eval_mean == pytest.approx(run.data.metrics["eval/mean_reward"])
        assert (platform_home / "runs" / outcome.run_id / "final" / "model.zip").is_file()
        pids[run.data.tags[tag.GRID_POINT]].add(run.data.tags[tag.WORKER_PID])
    # One process trained each point's three seeds: they were one batch.
    assert sorted(pids) == ["update.epochs=1", "update.epochs=4"]
    assert all(len(p) == 1 for p in pids.values())
    # The seeds of a point trained apart from each other: different curves.
    client = MlflowClient(get_settings().tracking_uri)
    first_point = [o for o in result.outcomes if o.member.point.index == 0]
    curves = {
        tuple(m.value for m in client.get_metric_history(o.run_id, "train/approx_kl"))
        for o in first_point
    }
    assert len(curves) == 3


@pytest.mark.slow
def test_rerunning_an_interrupted_compiled_sweep_trains_only_the_unfinished(platform_home):
    spec = load_spec_text(SWEEP.replace("[1, 4]", "[4]"), "s.yaml")
    first = run_sweep(spec, workers=1, report=False)
    client = MlflowClient(get_settings().tracking_uri)
    killed = first.outcomes[1]
    client.set_terminated(killed.run_id, "KILLED")
    client.set_terminated(first.parent_run_id, "KILLED")

    second = run_sweep(spec, workers=1, report=False)

    assert second.resumed and second.parent_run_id == first.parent_run_id
    assert [o.skipped for o in second.outcomes] == [True, False, True]
    assert second.outcomes[1].status == "FINISHED"
    rerun = client.get_run(second.outcomes[1].run_id)
    assert rerun.data.tags[tag.TRAINING_PATH] == "compiled"
    assert rerun.data.tags[tag.SWEEP_KEY] == killed.member.key
    assert client.get_run(first.parent_run_id).info.status == "FINISHED"


def test_compiled_on_where_it_cannot_run_refuses_the_sweep_before_any_run(platform_home):
    spec = load_spec_text(SWEEP.replace("CartPole-v1", "Pendulum-v1"), "s.yaml")
    with pytest.raises(SpecError) as refused:
        run_sweep(spec, workers=1, report=False)
    issues = refused.value.issues  # one per grid point, named
    assert [i.message.split(":", 1)[0] for i in issues] == [
        "the compiled path cannot run this spec at grid point update.epochs=1",
        "the compiled path cannot run this spec at grid point update.epochs=4",
    ]
    for issue in issues:
        assert issue.path == "compiled" and issue.value == "on"
        assert "Pendulum-v1 has no JAX port" in issue.message and "compiled: auto" in issue.fix
    assert not (platform_home / "runs").exists()


def test_a_batch_that_breaks_closes_each_member_failed_naming_why(platform_home):
    """A batch whose training raises (here: its points' configurations differ, which
    run_members refuses) records every member FAILED with the error: the run the batch had
    opened for a member is closed so, a member without one gets a FAILED run of its own."""
    from ppo_platform.tracking.remote import run_tags

    members = expand_sweep(load_spec_text(SWEEP, "s.yaml"))
    settings = get_settings()
    client = MlflowClient(settings.tracking_uri)
    experiment = client.create_experiment(members[0].spec.experiment_name)
    parent = client.create_run(experiment).info.run_id
    first, other = members[0], members[3]  # update.epochs=1 seed 0, update.epochs=4 seed 0
    planned = [(m.key, m.seed, m.spec, dict(m.tags)) for m in (first, other)]
    # The run the batch opened for its first member before it broke, left RUNNING.
    opened = client.create_run(experiment, tags=run_tags(first.spec, parent, dict(first.tags))).info
    found = run_batch(planned, parent, settings)
    assert list(found) == [first.key, other.key]
    assert found[first.key].run_id == opened.run_id
    assert found[other.key].run_id not in (None, opened.run_id)
    for failure in found.values():
        assert "a compiled batch trains one configuration on distinct seeds" in failure.error
        run = client.get_run(failure.run_id)
        assert run.info.status == "FAILED"
        assert run.data.tags[tag.PARENT_RUN_ID] == parent
        assert run.data.tags[tag.FAILURE] == failure.error
    assert {client.get_run(f.run_id).data.tags[tag.SWEEP_KEY] for f in found.values()} == {
        first.key,
        other.key,
    }

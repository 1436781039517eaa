"""A solved run is not a collapsed one: `entropy_collapse` and `std_collapse` name no cause when
the return from the collapse on is at the level the env's registry declares solved (gymnasium's
reward_threshold), say why in `not_judged`, and judge as before where the env declares none
(docs/guides/diagnostics.md, "The doctor")."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from series_factory import CARTPOLE, curve, flat_return, healthy

from ppo_platform.doctor import diagnose, facts_from_spec
from ppo_platform.envs.solved import solved_return_of
from ppo_platform.spec.loader import load_spec, load_spec_text

REPO = Path(__file__).resolve().parents[3]
# A real run, stored: FrozenLake-v1 4x4 not slippery, solved (eval return 1.0) by 5k steps,
# its entropy below 10% of its first value from step 7,168 (the doctor named entropy_collapse
# on it before it read the solved level).
FROZENLAKE = REPO / "tests" / "fixtures" / "doctor_series" / "frozenlake_solved.json"
FROZENLAKE_SPEC = REPO / "benchmarks" / "learning" / "corpus_specs" / "frozenlake.yaml"


def frozenlake() -> dict[str, list[tuple[int, float]]]:
    metrics = json.loads(FROZENLAKE.read_text())["metrics"]
    return {name: [(int(s), float(v)) for s, v in points] for name, points in metrics.items()}


def test_the_registry_declares_the_solved_level_or_none() -> None:
    assert solved_return_of("CartPole-v1") == 475.0
    assert solved_return_of("FrozenLake-v1") == 0.7
    assert solved_return_of("CliffWalking-v1") is None  # gymnasium registers no threshold
    assert solved_return_of("Pendulum-v1") is None
    assert solved_return_of("NoSuchEnv-v0") is None
    facts = facts_from_spec(load_spec(FROZENLAKE_SPEC))
    assert facts.env_id == "FrozenLake-v1" and facts.solved_return == 0.7
    cliff = load_spec_text("name: c\nenv: CliffWalking-v1\n")
    assert facts_from_spec(cliff).solved_return is None


def test_a_solved_run_whose_entropy_collapsed_is_not_named_and_says_why() -> None:
    diagnosis = diagnose(frozenlake(), facts_from_spec(load_spec(FROZENLAKE_SPEC)))
    assert diagnosis.causes == []
    reasons = {n.cause: n.reason for n in diagnosis.not_judged}
    assert "from step 7,168" in reasons["entropy_collapse"]
    assert "solved level (0.7, its registered reward_threshold)" in reasons["entropy_collapse"]


def test_a_collapse_below_the_solved_level_is_still_named() -> None:
    facts = replace(facts_from_spec(load_spec(FROZENLAKE_SPEC)), solved_return=1.5)
    found = diagnose(frozenlake(), facts).causes
    assert found and found[0].cause == "entropy_collapse" and found[0].first_step == 7168
    assert "entropy_collapse" not in {n.cause for n in diagnose(frozenlake(), facts).not_judged}


def test_an_env_that_declares_no_level_is_judged_as_before() -> None:
    facts = replace(facts_from_spec(load_spec(FROZENLAKE_SPEC)), solved_return=None)
    found = diagnose(frozenlake(), facts).causes
    assert [f.cause for f in found] == ["entropy_collapse"] and found[0].confidence == 0.7
    assert found[0].patch == {"surrogate.entropy_coef": 0.01}


def test_a_std_collapse_at_the_solved_level_is_not_named() -> None:
    series = healthy(continuous=True)
    curve(lambda i: 1.0 if i < 4 else 0.01, "train/std", series)
    flat_return(series, 95.0, 1.0)
    continuous = replace(CARTPOLE, env_id="MountainCarContinuous-v0", continuous=True)
    assert diagnose(series, continuous).causes[0].cause == "std_collapse"  # no level known
    solved = replace(continuous, solved_return=solved_return_of("MountainCarContinuous-v0"))
    assert solved.solved_return == 90.0
    diagnosis = diagnose(series, solved)
    assert "std_collapse" not in {c.cause for c in diagnosis.causes}
    reason = next(n.reason for n in diagnosis.not_judged if n.cause == "std_collapse")
    assert reason.startswith("the action std collapsed from step")


def test_a_run_records_its_envs_solved_level_for_a_later_doctor() -> None:
    from ppo_platform.tracking import tags as tag
    from ppo_platform.tracking.remote import run_tags

    assert run_tags(load_spec_text("name: c\nenv: CartPole-v1\n"))[tag.SOLVED_RETURN] == "475.0"
    assert tag.SOLVED_RETURN not in run_tags(load_spec_text("name: p\nenv: Pendulum-v1\n"))


def test_the_doctor_of_a_stored_run_reads_the_solved_level_its_run_recorded(
    platform_home: Path,
) -> None:
    # A run opened and logged through the tracking process (the FrozenLake run's metrics),
    # its folder's spec then gone, as on a machine that never had the run's env packages: the
    # doctor knows the env's solved level from the run's tag alone and judges it as solved.
    from ppo_platform.settings import get_settings
    from ppo_platform.tracking import tags as tag
    from ppo_platform.tracking.remote import RemoteRun, shared_tracking_process
    from ppo_platform.training.diagnosis import diagnose_stored_run

    settings = get_settings()
    with RemoteRun.open(shared_tracking_process(), settings, load_spec(FROZENLAKE_SPEC)) as run:
        steps = sorted({step for points in frozenlake().values() for step, _ in points})
        for step in steps:
            row = {n: v for n, points in frozenlake().items() for s, v in points if s == step}
            run.log_metrics(row, step)
        run.finish("FINISHED", {})
    run_id = run.run_id
    (settings.runs_dir / run_id / "spec.yaml").unlink()
    diagnosis, spec = diagnose_stored_run(run_id, settings)
    assert spec is None  # nothing but the stored run: its metrics and its tags
    assert diagnosis.causes == []
    reasons = {n.cause: n.reason for n in diagnosis.not_judged}
    assert "solved level (0.7, its registered reward_threshold)" in reasons["entropy_collapse"]
    # Without the tag the same stored run is a collapse: the tag is what the doctor read.
    from mlflow.tracking import MlflowClient

    MlflowClient(settings.tracking_uri).delete_tag(run_id, tag.SOLVED_RETURN)
    found = diagnose_stored_run(run_id, settings)[0].causes
    assert [f.cause for f in found] == ["entropy_collapse"]

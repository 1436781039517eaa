"""Findings 5, 7 and 11: what a spec may ask of the service. A rollout larger than the budget
is refused and whole rollouts are counted against the step limit; env kwargs are sized before
any env is built from them; an env that would import code by name is refused by rule."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from ppo_platform.envs.ids import refuse_importing_env
from ppo_platform.errors import SpecError

YAML = {"Content-Type": "application/yaml"}


def _issues(response) -> dict[str, dict]:
    assert response.status_code == 422, response.text
    return {issue["path"]: issue for issue in response.json()["issues"]}


def test_a_rollout_larger_than_the_budget_is_refused(alice, post_spec) -> None:
    text = (
        "name: big-rollout\nenv: {id: CartPole-v1, n_envs: 2}\nrollout: {n_steps: 4096}\n"
        "update: {minibatch_size: 64}\nbudget: {total_timesteps: 512}\n"
    )
    for response in (
        alice.post("/v1/specs/validate", content=text, headers=YAML),
        post_spec(alice, text),
    ):
        issue = _issues(response)["budget.total_timesteps"]
        assert issue["rule"] == "rollout_over_budget" and "8192" in issue["message"]
        assert "at least 8192" in issue["fix"]


def test_the_step_limit_counts_whole_rollouts(server_factory, tmp_path, post_spec) -> None:
    # 1000 steps in rollouts of 64 train 1024 (16 rollouts): over a limit of 1000.
    server = server_factory(tmp_path, PPO_PLATFORM_MAX_ENV_STEPS="1000")
    try:
        with server.client("alice") as alice:
            text = (
                "name: s\nenv: {id: ppo_platform/GridWorld-v0, n_envs: 1}\n"
                "rollout: {n_steps: 64}\nbudget: {total_timesteps: %d}\n"
            )
            issue = _issues(post_spec(alice, text % 1000))["budget.total_timesteps"]
            assert "1024 env steps" in issue["message"] and issue["rule"] == "max_env_steps"
            accepted = post_spec(alice, text % 960)  # 15 whole rollouts
            assert accepted.status_code == 202 and accepted.json()["total_timesteps"] == 960
    finally:
        server.kill()


def test_a_huge_env_kwarg_is_refused_before_any_env_is_built(alice, bob) -> None:
    rows = ["S" + "F" * 698 + "F"] * 699 + ["F" * 699 + "G"]  # FrozenLake 700 x 700, ~490 KB
    text = "name: lake\nenv:\n  id: FrozenLake-v1\n  kwargs:\n    desc:\n" + "".join(
        f"    - {row}\n" for row in rows
    )

    def validate_small() -> int:
        response = bob.post("/v1/specs/validate", content="name: s\nenv: CartPole-v1\n",
                            headers=YAML)  # fmt: skip
        return response.status_code

    with ThreadPoolExecutor(2) as pool:
        huge = pool.submit(alice.post, "/v1/specs/validate", content=text, headers=YAML)
        small = pool.submit(validate_small)
        response = huge.result()
    # The size rule answers before any env is built (building this one took 12 s and 1 GB).
    issue = _issues(response)["env.kwargs"]
    assert issue["rule"] == "oversized_env_kwargs" and "16384" in issue["message"]
    assert small.result() == 200


@pytest.mark.parametrize(
    ("env", "path"),
    [
        ("{id: GymV26Environment-v0, kwargs: {env_id: 'os:system'}}", "env.id"),
        ("{id: GymV21Environment-v0}", "env.id"),
        ("{id: CartPole-v1, kwargs: {env_id: 'builtins:eval'}}", "env.kwargs.env_id"),
        ("{id: CartPole-v1, kwargs: {entry: [ok, 'my.module:Env']}}", "env.kwargs.entry"),
    ],
)
def test_an_env_that_imports_by_name_is_refused_by_rule(alice, env, path) -> None:
    response = alice.post("/v1/specs/validate", content=f"name: x\nenv: {env}\n", headers=YAML)
    issue = _issues(response)[path]
    assert issue["rule"] == "imports_by_name", issue


def test_the_import_rule_holds_whatever_is_registered() -> None:
    # GymV26Environment-v0 is refused by name even where shimmy makes gymnasium know it.
    with pytest.raises(SpecError) as caught:
        refuse_importing_env("GymV26Environment-v0", {"env_id": "ALE/Pong-v5"})
    assert caught.value.issues[0].rule == "imports_by_name"
    refuse_importing_env("CartPole-v1", {"map_name": "4x4", "is_slippery": True})


def test_a_study_that_can_sample_a_rollout_over_the_budget_is_refused(alice) -> None:
    text = (
        "name: t\nenv: {id: ppo_platform/GridWorld-v0, n_envs: 1}\nrollout: {n_steps: 64}\n"
        "update: {minibatch_size: 64}\nbudget: {total_timesteps: 512}\n"
        "tune:\n  n_trials: 2\n  space:\n"
        "    rollout.n_steps: {type: categorical, choices: [64, 1024]}\n"
    )
    issue = _issues(alice.post("/v1/specs/validate", content=text, headers=YAML))["tune.space"]
    assert issue["rule"] == "rollout_over_budget" and issue["value"] == 1024
    allowed = text.replace("1024", "128")
    assert alice.post("/v1/specs/validate", content=allowed, headers=YAML).status_code == 200


def test_a_rollout_past_the_budget_only_in_combination_is_refused_as_tune_refuses_it(
    alice, post_spec
) -> None:
    """Each sampled value fits the budget alone; the largest of both together do not. The
    service answers with the words of `tune` (the space's own check, tuning/space.py)."""
    text = (
        "name: t\nenv: {id: ppo_platform/GridWorld-v0, n_envs: 2}\nrollout: {n_steps: 64}\n"
        "update: {minibatch_size: 64}\nbudget: {total_timesteps: 1000}\n"
        "tune:\n  n_trials: 2\n  space:\n"
        "    env.n_envs: {type: categorical, choices: [2, 4]}\n"
        "    rollout.n_steps: {type: categorical, choices: [64, 256]}\n"
    )
    before = alice.get("/v1/experiments").json()["items"]
    for response in (
        alice.post("/v1/specs/validate", content=text, headers=YAML),
        post_spec(alice, text),
    ):
        issue = _issues(response)["tune.space"]
        assert issue["rule"] == "rollout_over_budget" and issue["value"] == 1024
        assert "4 x 256 = 1024 env steps" in issue["message"]
        assert "budget.total_timesteps = 1000" in issue["message"]
        assert "the highest rollout.n_steps it samples" in issue["fix"]
    assert alice.get("/v1/experiments").json()["items"] == before  # nothing queued


STUDY = """name: study
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
update: {minibatch_size: 64}
budget: {total_timesteps: %d}
evaluation: {every_timesteps: 0, episodes: 1}
tune:
  n_trials: 2
  pruner: {type: none}
  space:
    update.epochs: {type: int, low: 1, high: 3}
"""


@pytest.mark.parametrize(
    ("budget", "extra", "trained"),
    [
        # 2 trials x 20 seeds x 150,016 (whole rollouts of 64): counted as 2 runs before.
        (150_000, "  seeds_per_trial: 20\n", 6_000_640),
        (150_000, "  seeds_per_trial: 2\n  racing: {seeds_max: 20}\n", 6_000_640),
        # 2 trials, then the 2 best on 20 held-out seeds: 42 runs of 128,000.
        (128_000, f"  verify: {{seeds: {list(range(100, 120))}, top_trials: 3}}\n", 5_376_000),
        # A budget the space samples: each trial may train its highest.
        (1_000, "    budget.total_timesteps: {type: int, low: 1000, high: 10000000}\n", 20_000_000),
    ],
)
def test_a_study_is_counted_by_every_run_it_can_start(alice, post_spec, budget, extra, trained):
    issue = _issues(post_spec(alice, STUDY % budget + extra))["budget.total_timesteps"]
    assert issue["rule"] == "max_env_steps", issue
    assert f"would train {trained} env steps" in issue["message"], issue["message"]


HUGE_DESC = "F" * 20_000


@pytest.mark.parametrize(
    ("space", "rule"),
    [
        ("env.id: {type: categorical, choices: [CartPole-v1, GymV26Environment-v0]}",
         "imports_by_name"),
        ("env.kwargs.env_id: {type: categorical, choices: [a, 'os:system']}", "imports_by_name"),
        (f"env.kwargs.desc: {{type: categorical, choices: [SF, {HUGE_DESC}]}}",
         "oversized_env_kwargs"),
        ("budget.total_timesteps: {type: int, low: 32, high: 4096}", "rollout_over_budget"),
    ],
)  # fmt: skip
def test_a_study_cannot_sample_what_a_spec_may_not_ask(alice, space, rule) -> None:
    # Each value of the space passes the rules a submitted spec passes, before any env is
    # built from it: a trial is never the first to meet it.
    text = (STUDY % 1_000).replace("    update.epochs", f"    {space}\n    update.epochs")
    response = alice.post("/v1/specs/validate", content=text, headers=YAML)
    assert response.status_code == 422, response.text
    rules = {issue["rule"] for issue in response.json()["issues"]}
    assert rules == {rule}, response.json()["issues"]
    assert all(i["path"].startswith("tune.space") for i in response.json()["issues"])

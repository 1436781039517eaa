"""The skill-ppo-trainer planner as a library: derived values, use cases, refusals, errors."""

from __future__ import annotations

import re

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from ppo_platform.errors import SpecError
from ppo_platform.planner import (
    LM_USE_CASES,
    PLAN_USE_CASES,
    USE_CASES,
    minimum_budget,
    plan_experiment,
    plan_lm_experiment,
    write_plan,
)
from ppo_platform.planner.render import FRONT_MATTER, SECTIONS
from ppo_platform.planner.use_cases import BY_NAME
from ppo_platform.spec.loader import load_spec_text

IMAGE_ENV_ID = "ppo_platform_test/TinyImage-v0"
BROKEN_ENV_ID = "ppo_platform_test/Broken-v0"


class TinyImageEnv(gymnasium.Env):
    """An Atari-shaped env (84x84x3 uint8 frames, 4 actions): enough for the planner to inspect."""

    def __init__(self, render_mode: str | None = None) -> None:
        self.observation_space = spaces.Box(0, 255, (84, 84, 3), dtype=np.uint8)
        self.action_space = spaces.Discrete(4)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros((84, 84, 3), dtype=np.uint8), {}

    def step(self, action):
        return np.zeros((84, 84, 3), dtype=np.uint8), 0.0, False, False, {}


def broken_env(**kwargs):
    raise ImportError("needs the 'unobtainium' package: pip install unobtainium")


if IMAGE_ENV_ID not in gymnasium.registry:
    gymnasium.register(IMAGE_ENV_ID, entry_point=TinyImageEnv, max_episode_steps=1000)
if BROKEN_ENV_ID not in gymnasium.registry:
    gymnasium.register(BROKEN_ENV_ID, entry_point=broken_env)

USE_CASE_ENVS = [
    ("auto", "CartPole-v1", 100_000),
    ("classic-control", "Acrobot-v1", 100_000),
    ("continuous-control", "Pendulum-v1", 200_000),
    ("atari", IMAGE_ENV_ID, 10_000_000),
]


def single_issue(error: pytest.ExceptionInfo[SpecError]):
    assert len(error.value.issues) == 1, error.value.render()
    return error.value.issues[0]


@pytest.mark.parametrize(("use_case", "env_id", "budget"), USE_CASE_ENVS)
def test_every_use_case_writes_a_spec_that_validates(use_case, env_id, budget, tmp_path):
    plan = plan_experiment(env_id, budget, use_case)
    spec_path, _ = write_plan(plan, tmp_path)
    reloaded = load_spec_text(spec_path.read_text(), str(spec_path))
    assert reloaded == plan.spec
    assert reloaded.env.id == env_id


@pytest.mark.parametrize(("use_case", "env_id", "budget"), USE_CASE_ENVS)
def test_every_use_case_writes_the_front_matter_and_five_sections(
    use_case, env_id, budget, tmp_path
):
    _, markdown_path = write_plan(plan_experiment(env_id, budget, use_case), tmp_path)
    text = markdown_path.read_text()
    assert text.startswith(FRONT_MATTER)
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings[:5] == list(SECTIONS)


def test_front_matter_is_the_seed_template():
    assert FRONT_MATTER.splitlines() == [
        "---",
        "name: ppo-trainer",
        "description: Produce a PPO training config and a diagnostic plan for a given environment.",
        "version: 1.0.0",
        "phase: 9",
        "lesson: 8",
        "tags: [rl, ppo, policy-gradient]",
        "---",
    ]


# env, budget -> N, T, K, minibatch, LR, gamma, lambda, observation normalization
DERIVED = [
    ("CartPole-v1", 100_000, 8, 32, 20, 256, 1e-3, 0.98, 0.8, False),  # rl-zoo's tuned values
    ("CartPole-v1", 50_000, 8, 16, 20, 128, 6e-4, 0.98, 0.8, False),  # smaller batch, lower LR
    ("CartPole-v1", 200_000, 8, 64, 10, 256, 1e-3, 0.98, 0.9, False),  # 2 minibatches, K halves
    ("CartPole-v1", 1_000_000, 8, 256, 4, 256, 1e-3, 0.98, 0.95, False),  # long T, K floor 4
    ("Acrobot-v1", 100_000, 8, 128, 5, 256, 1e-3, 0.99, 0.95, True),  # -1 per step: T 128
    ("MountainCar-v0", 100_000, 8, 128, 5, 256, 1e-3, 0.99, 0.95, True),  # time penalty too
    ("Acrobot-v1", 20_000, 8, 16, 20, 128, 6e-4, 0.99, 0.8, True),  # T 128: < 50 updates
    ("ppo_platform/GridWorld-v0", 20_000, 8, 16, 20, 128, 6e-4, 0.99, 0.8, False),  # -0.01 a step
    ("Pendulum-v1", 100_000, 4, 256, 10, 64, 1e-3, 0.95, 0.95, False),  # Gaussian, T >= episode
    ("Pendulum-v1", 200_000, 4, 512, 10, 64, 1e-3, 0.95, 0.95, False),  # gSDE: LR 1e-3
    ("Pendulum-v1", 1_000_000, 4, 2048, 10, 256, 1e-3, 0.95, 0.95, False),  # max_batch 8192
]


@pytest.mark.parametrize(
    ("env_id", "budget", "n", "t", "k", "minibatch", "lr", "gamma", "lam", "norm_obs"), DERIVED
)
def test_derived_values_follow_the_env_and_the_budget(
    env_id, budget, n, t, k, minibatch, lr, gamma, lam, norm_obs
):
    spec = plan_experiment(env_id, budget).spec
    got = (
        spec.env.n_envs,
        spec.rollout.n_steps,
        spec.update.epochs,
        spec.update.minibatch_size,
        spec.update.learning_rate.start,
        spec.advantage.gamma,
        spec.advantage.gae_lambda,
        spec.env.normalize.obs,
    )
    assert got == (n, t, k, minibatch, lr, gamma, lam, norm_obs)


@pytest.mark.parametrize("budget", [20_000, 100_000, 1_000_000, 10_000_000])
def test_minibatches_divide_the_batch(budget):
    spec = plan_experiment("CartPole-v1", budget).spec
    assert spec.batch_size % spec.update.minibatch_size == 0


def test_cartpole_plan_lands_on_the_rl_zoo_schedules():
    spec = plan_experiment("CartPole-v1", 100_000).spec
    assert spec.update.learning_rate.schedule == "linear"
    assert (spec.surrogate.clip_epsilon.start, spec.surrogate.clip_epsilon.schedule) == (
        0.2,
        "linear",
    )
    assert spec.surrogate.entropy_coef == 0.0
    assert spec.surrogate.normalize_advantage is True


def test_continuous_control_normalizes_far_from_unit_observations_and_rewards():
    spec = plan_experiment("MountainCarContinuous-v0", 200_000).spec  # velocity +-0.07
    assert (spec.env.normalize.obs, spec.env.normalize.reward) == (True, True)
    assert spec.advantage.gae_lambda == 0.95


def test_continuous_control_with_unit_scale_observations_normalizes_nothing():
    spec = plan_experiment("Pendulum-v1", 200_000).spec  # cos, sin in +-1, velocity +-8
    assert (spec.env.normalize.obs, spec.env.normalize.reward) == (False, False)
    assert (spec.policy.use_sde, spec.policy.sde_sample_freq) == (True, 4)


def test_continuous_rollouts_cover_a_whole_episode():
    plan = plan_experiment("MountainCarContinuous-v0", 250_000)  # 2048 / 4 envs: T = 512 < 999
    assert plan.env.horizon == 999
    assert plan.spec.rollout.n_steps == 1024
    assert (
        "raised to T = 1024 so each env's rollout holds a whole 999-step episode"
        in (plan.reasons["rollout.n_steps"])
    )


def test_image_observations_plan_the_atari_defaults():
    plan = plan_experiment(IMAGE_ENV_ID, 10_000_000)
    spec = plan.spec
    assert plan.use_case == "atari"
    assert (spec.env.n_envs, spec.rollout.n_steps, spec.update.epochs) == (8, 128, 4)
    assert spec.update.minibatch_size == 256
    assert spec.policy.net_arch == []
    assert (spec.update.learning_rate.start, spec.surrogate.clip_epsilon.start) == (2.5e-4, 0.1)
    assert spec.surrogate.entropy_coef == 0.01
    assert "categorical policy, Nature CNN" in plan.markdown


def test_rlhf_on_a_gymnasium_env_is_refused_with_the_language_model_way():
    with pytest.raises(SpecError) as error:
        plan_experiment("CartPole-v1", 100_000, "rlhf")
    issue = single_issue(error)
    assert issue.path == "use_case" and issue.value == "rlhf"
    assert "--model-dir DIR --prompts FILE.jsonl" in issue.fix


def test_too_few_updates_is_a_warning_in_the_plan():
    plan = plan_experiment("CartPole-v1", 5_000)
    assert plan.updates == 40
    assert "raise --budget to 12,800" in plan.warnings[0]
    assert "## Warnings" in plan.markdown


def test_every_planned_field_has_a_reason_in_the_markdown():
    plan = plan_experiment("CartPole-v1", 100_000)
    for path in ("env.n_envs", "rollout.n_steps", "update.epochs", "advantage.gae_lambda"):
        assert plan.reasons[path] in plan.markdown


def test_markdown_flags_sustained_clip_fraction_above_0_4_as_drift():
    plan = plan_experiment("CartPole-v1", 100_000)
    window = plan.spec.diagnostics.window
    assert f"| above 0.4 for {window} updates in a row, with the KL above 0.02 | **drift**" in (
        plan.markdown
    )


def test_plan_never_emits_more_than_30_epochs_or_epsilon_above_0_3():
    for env_id, budget in [
        ("CartPole-v1", 1_280),
        ("Pendulum-v1", 10_000_000),
        (IMAGE_ENV_ID, 10_240),
    ]:
        spec = plan_experiment(env_id, budget).spec
        assert spec.update.epochs <= 30
        assert spec.surrogate.clip_epsilon.start <= 0.3


def test_overrides_are_applied_and_said_so():
    plan = plan_experiment("CartPole-v1", 100_000, overrides=["budget.seed=2"])
    assert plan.spec.budget.seed == 2
    assert "set by the caller with `--set budget.seed=2`" in plan.reasons["budget.seed"]
    assert "- `--set budget.seed=2`" in plan.markdown


def test_override_of_a_sub_field_names_the_planned_value():
    plan = plan_experiment("CartPole-v1", 100_000, overrides=["update.learning_rate.start=5e-4"])
    assert plan.spec.update.learning_rate.start == 5e-4
    assert (
        "own choice was {'start': 0.001, 'schedule': 'linear'}"
        in plan.reasons["update.learning_rate"]
    )


@pytest.mark.parametrize(
    ("override", "path", "message"),
    [
        ("update.epochs=31", "update.epochs", "refused: K = 31 epochs is above the limit of 30"),
        (
            "surrogate.clip_epsilon=0.31",
            "surrogate.clip_epsilon.start",
            "refused: clip epsilon 0.31 is above the limit of 0.3",
        ),
        (
            "surrogate.normalize_advantage=false",
            "surrogate.normalize_advantage",
            "refused: PPO without advantage normalization",
        ),
        (
            "diagnostics.monitor_kl=false",
            "diagnostics.monitor_kl",
            "refused: PPO without approx KL monitoring",
        ),
        (
            "diagnostics.monitor_clip_fraction=false",
            "diagnostics.monitor_clip_fraction",
            "refused: PPO without clip fraction monitoring",
        ),
    ],
)
def test_unsafe_overrides_are_refused_with_the_rules_messages(override, path, message):
    with pytest.raises(SpecError) as caught:
        plan_experiment("CartPole-v1", 100_000, overrides=[override])
    issue = single_issue(caught)
    assert caught.value.refused
    assert (issue.path, issue.message.startswith(message)) == (path, True)


def test_epochs_30_and_epsilon_0_3_are_allowed_as_overrides():
    spec = plan_experiment(
        "CartPole-v1", 100_000, overrides=["update.epochs=30", "surrogate.clip_epsilon.start=0.3"]
    ).spec
    assert (spec.update.epochs, spec.surrogate.clip_epsilon.start) == (30, 0.3)


def test_overriding_the_env_id_is_refused():
    with pytest.raises(SpecError) as caught:
        plan_experiment("CartPole-v1", 100_000, overrides=["env.id=Acrobot-v1"])
    assert single_issue(caught).fix == "plan for that environment instead: --env ID"


def test_overriding_the_algorithm_to_a2c_is_refused():
    with pytest.raises(SpecError) as caught:
        plan_experiment("CartPole-v1", 100_000, overrides=["algorithm=a2c"])
    assert single_issue(caught).message == "the planner plans PPO runs only."


def test_unknown_env_id_suggests_close_matches():
    with pytest.raises(SpecError) as caught:
        plan_experiment("CartPol-v1", 100_000)
    issue = single_issue(caught)
    assert (issue.path, issue.value) == ("env.id", "CartPol-v1")
    assert issue.fix.startswith("did you mean CartPole-v1")


def test_env_id_with_a_module_prefix_is_refused_before_gymnasium_imports_it():
    with pytest.raises(SpecError) as caught:
        plan_experiment("os:CartPole-v1", 100_000)
    assert single_issue(caught).message == "is not a valid environment id."


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (0, "must be a positive number of env steps."),
        (-5, "must be a positive number of env steps."),
        (10**11, "is absurd: more than 1e+10 env steps (the spec's limit)."),
    ],
)
def test_non_positive_and_absurd_budgets_are_errors(budget, message):
    with pytest.raises(SpecError) as caught:
        plan_experiment("CartPole-v1", budget)
    issue = single_issue(caught)
    assert (issue.path, issue.message) == ("budget", message)


def test_too_small_budget_names_the_minimum():
    with pytest.raises(SpecError) as caught:
        plan_experiment("CartPole-v1", 1_000)
    issue = single_issue(caught)
    assert minimum_budget(BY_NAME["classic-control"]) == 1_280
    assert "needs at least 1,280 env steps" in issue.message
    assert issue.fix.startswith("pass --budget 1280 or more")


def test_the_minimum_budget_itself_plans():
    assert plan_experiment("CartPole-v1", 1_280).updates == 10


def test_unknown_use_case_lists_the_known_ones():
    with pytest.raises(SpecError) as caught:
        plan_experiment("CartPole-v1", 100_000, "mujoco")
    issue = single_issue(caught)
    assert (issue.path, issue.value) == ("use_case", "mujoco")
    assert issue.fix == "use one of auto, classic-control, continuous-control, atari, rlhf."


def test_a_language_model_plan_refuses_a_use_case_that_is_not_one():
    """Checked before any file is read: the REST API and the CLI reach this one planner."""
    with pytest.raises(SpecError) as caught:
        plan_lm_experiment("no-such-model", "no-such.jsonl", 100, use_case="atari")
    issue = single_issue(caught)
    assert (issue.path, issue.value) == ("use_case", "atari")
    assert issue.fix == "use rlhf (PPO) or reasoning (GRPO)."


def test_the_use_cases_plan_takes_are_the_env_ones_and_the_language_model_ones():
    assert set(PLAN_USE_CASES) == set(USE_CASES) | set(LM_USE_CASES)
    assert len(PLAN_USE_CASES) == len(set(PLAN_USE_CASES))


@pytest.mark.parametrize(
    ("env_id", "use_case", "fix"),
    [
        ("CartPole-v1", "continuous-control", "use --use-case auto or classic-control."),
        ("Pendulum-v1", "classic-control", "use --use-case continuous-control (or auto)."),
        ("CartPole-v1", "atari", "use --use-case auto (or classic-control / continuous-control)."),
    ],
)
def test_a_use_case_that_does_not_fit_the_env_is_an_error(env_id, use_case, fix):
    with pytest.raises(SpecError) as caught:
        plan_experiment(env_id, 100_000, use_case)
    assert single_issue(caught).fix == fix


def test_env_that_gymnasium_cannot_create_is_an_error_naming_the_cause():
    with pytest.raises(SpecError) as caught:
        plan_experiment(BROKEN_ENV_ID, 100_000)
    issue = single_issue(caught)
    assert issue.message == (
        "needs a dependency that is not installed: needs the 'unobtainium' "
        "package: pip install unobtainium"
    )


def test_observations_sb3_cannot_read_are_an_error():
    with pytest.raises(SpecError) as caught:
        plan_experiment("Blackjack-v1", 100_000)  # Tuple observations
    issue = single_issue(caught)
    # A fresh home meets the shared env check first; a cached env meets the planner's own rule.
    assert "observation" in issue.message and issue.value == "Blackjack-v1"


def test_discrete_observations_plan_like_classic_control():
    plan = plan_experiment("FrozenLake-v1", 100_000)
    assert (plan.use_case, plan.env.observation_kind) == ("classic-control", "discrete")


def test_spec_yaml_header_stays_one_comment_line_per_entry():
    plan = plan_experiment("CartPole-v1", 100_000, overrides=["tracking.tags={a: b}\nname: x"])
    text = plan.spec_yaml()
    assert text.splitlines()[0].endswith("--set tracking.tags={a: b} name: x`.")
    assert load_spec_text(text, "spec.yaml") == plan.spec

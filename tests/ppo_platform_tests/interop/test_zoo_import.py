"""import-zoo on real rl-baselines3-zoo entries (tests/fixtures/zoo_ppo.yml, rl_zoo3 2.9.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppo_platform.errors import SpecError
from ppo_platform.interop import import_zoo, read_zoo_file
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.spec.rules import TRUST_REGION_RULE
from ppo_platform.tracking import tags

ZOO = Path(__file__).resolve().parents[2] / "fixtures" / "zoo_ppo.yml"


def issues_of(env_id: str, path: Path = ZOO) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        import_zoo(path, env_id, check_env=False)
    return {issue.path: issue.message for issue in caught.value.issues}


def test_pendulum_keeps_every_number_and_gsde():
    spec = import_zoo(ZOO, "Pendulum-v1").spec
    assert (spec.env.id, spec.env.n_envs, spec.rollout.n_steps) == ("Pendulum-v1", 4, 1024)
    assert spec.budget.total_timesteps == 100_000
    assert (spec.advantage.gamma, spec.advantage.gae_lambda) == (0.9, 0.95)
    assert (spec.update.epochs, spec.update.minibatch_size) == (10, 64)  # SB3's default batch
    assert spec.update.learning_rate.start == 1e-3
    assert spec.update.learning_rate.schedule == "constant"
    assert (spec.surrogate.clip_epsilon.start, spec.surrogate.entropy_coef) == (0.2, 0.0)
    assert (spec.policy.use_sde, spec.policy.sde_sample_freq) == (True, 4)
    assert (spec.env.normalize.obs, spec.env.normalize.reward) == (False, False)


def test_cartpole_lin_strings_become_linear_schedules():
    spec = import_zoo(ZOO, "CartPole-v1").spec
    assert spec.update.learning_rate.model_dump() == {
        "start": 0.001,
        "schedule": "linear",
        "end": 0.0,
    }
    assert spec.surrogate.clip_epsilon.model_dump() == {
        "start": 0.2,
        "schedule": "linear",
        "end": 0.0,
    }
    assert (spec.env.n_envs, spec.rollout.n_steps, spec.update.minibatch_size) == (8, 32, 256)
    assert (spec.update.epochs, spec.advantage.gamma, spec.advantage.gae_lambda) == (20, 0.98, 0.8)


@pytest.mark.parametrize(
    ("env_id", "n_envs", "n_steps", "gamma", "lam"),
    [("MountainCar-v0", 16, 16, 0.99, 0.98), ("Acrobot-v1", 16, 256, 0.99, 0.94)],
)
def test_normalize_true_turns_on_obs_and_reward(env_id, n_envs, n_steps, gamma, lam):
    spec = import_zoo(ZOO, env_id).spec
    assert (spec.env.normalize.obs, spec.env.normalize.reward) == (True, True)
    assert (spec.env.n_envs, spec.rollout.n_steps) == (n_envs, n_steps)
    assert (spec.advantage.gamma, spec.advantage.gae_lambda, spec.update.epochs) == (gamma, lam, 4)
    assert spec.budget.total_timesteps == 1_000_000


def test_mountaincar_continuous_policy_kwargs_and_effective_minibatch():
    result = import_zoo(ZOO, "MountainCarContinuous-v0")
    spec = result.spec
    assert (spec.policy.log_std_init, spec.policy.ortho_init, spec.policy.use_sde) == (
        -3.29,
        False,
        True,
    )
    assert (spec.surrogate.value_coef, spec.update.max_grad_norm) == (0.19, 5)
    assert (spec.advantage.gamma, spec.surrogate.entropy_coef) == (0.9999, 0.00429)
    assert spec.update.learning_rate.start == 7.77e-05
    # batch_size 256 > 1 env x 8 steps: SB3 steps on the whole rollout, and so does the spec.
    assert spec.update.minibatch_size == 8
    assert "batch_size 256 is larger than the rollout" in result.notes[0]
    assert "# Note: batch_size 256" in result.spec_yaml()


def test_lunarlander_entry_converts():
    spec = import_zoo(ZOO, "LunarLander-v3", check_env=False).spec
    assert (spec.env.n_envs, spec.rollout.n_steps, spec.update.minibatch_size) == (16, 1024, 64)
    assert (spec.advantage.gamma, spec.surrogate.entropy_coef) == (0.999, 0.01)


def test_merge_keys_and_anchors_are_followed():
    spec = import_zoo(ZOO, "Swimmer-v4", check_env=False).spec  # <<: *mujoco-defaults
    assert (spec.env.normalize.obs, spec.budget.total_timesteps) == (True, 1_000_000)
    assert (spec.advantage.gamma, spec.env.n_envs, spec.update.minibatch_size) == (0.9999, 4, 256)


def test_relu_and_dict_net_arch_map_onto_the_policy():
    spec = import_zoo(ZOO, "HalfCheetah-v4", check_env=False).spec
    assert spec.policy.activation == "relu"
    assert (spec.policy.net_arch, spec.policy.value_net_arch) == ([256, 256], None)
    assert (spec.policy.log_std_init, spec.policy.ortho_init) == (-2, False)
    assert (spec.surrogate.clip_epsilon.start, spec.update.epochs) == (0.1, 20)


def test_different_actor_and_critic_layers_are_kept(tmp_path):
    path = tmp_path / "ppo.yml"
    path.write_text(
        "Pendulum-v1:\n  n_timesteps: !!float 1e4\n"
        "  policy_kwargs: \"{'net_arch': dict(pi=[32], vf=[128, 128])}\"\n"
    )
    spec = import_zoo(path, "Pendulum-v1").spec
    assert (spec.policy.net_arch, spec.policy.value_net_arch) == ([32], [128, 128])


def test_the_spec_records_its_source():
    spec = import_zoo(ZOO, "CartPole-v1").spec
    assert spec.tracking.tags == {
        tags.IMPORTED_FROM: "rl-baselines3-zoo zoo_ppo.yml",
        tags.IMPORTED_ENTRY: "CartPole-v1",
    }
    assert spec.name == "cartpole-v1-zoo"


def test_written_spec_loads_back_equal():
    result = import_zoo(ZOO, "Pendulum-v1")
    assert load_spec_text(result.spec_yaml()) == result.spec


def test_clip_range_above_the_limit_is_refused_with_the_rule():
    with pytest.raises(SpecError) as caught:
        import_zoo(ZOO, "AntBulletEnv-v0", check_env=False)  # merged clip_range: 0.4
    (issue,) = caught.value.issues
    assert issue.rule == TRUST_REGION_RULE
    assert issue.path == "surrogate.clip_epsilon.start"
    assert issue.value == 0.4
    assert "refused: clip epsilon 0.4 is above the limit of 0.3" in issue.message
    assert caught.value.refused


def test_a_wrapper_outside_the_vocabulary_and_an_unknown_activation_are_named():
    issues = issues_of("CarRacing-v3")
    assert set(issues) == {"env_wrapper", "policy_kwargs"}  # frame_stack converts
    assert (
        "rl_zoo3.wrappers.FrameSkip is not in the platform's wrapper vocabulary"
        in (issues["env_wrapper"])
    )
    assert "nn.GELU" in issues["policy_kwargs"]


def test_a_string_wrapper_is_named_with_its_value():
    with pytest.raises(SpecError) as caught:
        import_zoo(ZOO, "MiniGrid-Empty-Random-5x5-v0", check_env=False)
    (issue,) = caught.value.issues
    assert (issue.path, issue.value) == ("env_wrapper", "minigrid.wrappers.FlatObsWrapper")


def write_entry(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "ppo.yml"
    path.write_text("CartPole-v1:\n  n_timesteps: !!float 1e4\n" + body)
    return path


@pytest.mark.parametrize(
    ("body", "path", "said"),
    [
        ("  callback: my.Callback\n", "callback", "training callback"),
        ("  use_rnn: true\n", "use_rnn", "not a PPO hyperparameter"),
        ('  policy_kwargs: "dict(net_arch=[64, 64]"\n', "policy_kwargs", "not a Python"),
        ('  policy_kwargs: "dict(optimizer_class=th.optim.SGD)"\n', "policy_kwargs", "names"),
        ('  policy_kwargs: "dict(full_std=False)"\n', "policy_kwargs.full_std", "full_std"),
        (
            '  policy_kwargs: "dict(net_arch=[64, dict(pi=[8], vf=[8])])"\n',
            "policy_kwargs.net_arch",
            "shares layers",
        ),
        ("  normalize: \"{'norm_obs': True, 'gamma': 0.9}\"\n", "normalize.gamma", "gamma"),
        ("  learning_rate: 1e-3\n", "learning_rate", "is a string"),
        ("  learning_rate: exp_0.1\n", "learning_rate", "lin_<x>"),
        ("  policy: MlpLstmPolicy\n", "policy", "not a policy"),
        ("  n_envs: 2.5\n", "n_envs", "whole number"),
    ],
)
def test_unexpressible_keys_and_malformed_literals_name_the_key(tmp_path, body, path, said):
    issues = issues_of("CartPole-v1", write_entry(tmp_path, body))
    assert path in issues, issues
    assert said in issues[path]


def test_normalize_string_sets_each_flag(tmp_path):
    body = "  normalize: \"{'norm_obs': False, 'norm_reward': True}\"\n"
    spec = import_zoo(write_entry(tmp_path, body), "CartPole-v1").spec
    assert (spec.env.normalize.obs, spec.env.normalize.reward) == (False, True)


def test_schema_errors_come_from_validate(tmp_path):
    issues = issues_of("CartPole-v1", write_entry(tmp_path, "  n_epochs: 31\n"))
    assert "K = 31 epochs is above the limit of 30" in issues["update.epochs"]


def test_gsde_on_discrete_actions_is_refused(tmp_path):
    with pytest.raises(SpecError, match="continuous"):
        import_zoo(write_entry(tmp_path, "  use_sde: True\n"), "CartPole-v1")


def test_unknown_entry_suggests_close_ones():
    with pytest.raises(SpecError, match="did you mean CartPole-v1"):
        import_zoo(ZOO, "CartPole-v0")


@pytest.mark.parametrize(
    "text",
    ["- a\n- b\n", "a: [\n", "!!python/object:os.system {}\n", "x: &a [*a]\nCartPole-v1: 1\n"],
)
def test_files_that_are_no_zoo_file_are_refused(tmp_path, text):
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(SpecError):
        import_zoo(path, "CartPole-v1")


def test_the_fixture_reads_as_plain_data():
    entries = read_zoo_file(ZOO)
    assert entries["AntBulletEnv-v0"]["n_envs"] == 16  # from the anchor
    assert entries["AntBulletEnv-v0"]["learning_rate"] == 3e-5

"""env.wrappers: a fixed vocabulary of data, validated, applied alike to training and
evaluation envs; the memory estimate counts what they produce."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from env_package_fixtures import LOCAL_ENV, LOCAL_MODULE
from stable_baselines3.common.vec_env import VecFrameStack, VecTransposeImage

from ppo_platform.envs.build import build_eval_env, build_train_env
from ppo_platform.envs.ids import check_spec_env
from ppo_platform.envs.packages import import_env_packages
from ppo_platform.errors import SpecError
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.resources import estimate

ATARI = (
    "name: pong\nenv:\n  id: ALE/Pong-v5\n  n_envs: 2\n  kwargs: {frameskip: 1}\n"
    "  vectorization: dummy\n"  # the per-env atari wrapper path (auto would pick EnvPool)
    "  wrappers: [atari, {name: frame_stack, n: 4}]\n"
    "evaluation: {episodes: 2}\n"
)


def test_a_name_alone_means_default_parameters(load: Callable[..., ExperimentSpec]) -> None:
    spec = load(ATARI)
    atari, stack = spec.env.wrappers
    assert (atari.name, atari.noop_max, atari.screen_size, atari.terminal_on_life_loss) == (
        "atari",
        30,
        84,
        True,
    )
    assert (stack.name, stack.n) == ("frame_stack", 4)


def test_an_unknown_parameter_names_the_wrapper_and_its_keys(single_issue) -> None:  # type: ignore[no-untyped-def]
    issue = single_issue(
        "name: x\nenv: {id: ALE/Pong-v5, wrappers: [{name: atari, noop_maxx: 3}]}\n"
    )
    assert issue.path == "env.wrappers.0.noop_maxx"
    assert "did you mean 'noop_max'?" in (issue.fix or "")


def test_a_parameter_out_of_range_is_refused_with_its_description(single_issue) -> None:  # type: ignore[no-untyped-def]
    issue = single_issue("name: x\nenv: {id: CartPole-v1, wrappers: [{name: frame_stack, n: 0}]}\n")
    assert issue.path == "env.wrappers.0.n"
    assert "Observations stacked" in (issue.fix or "")


def test_frame_stack_must_come_last(single_issue) -> None:  # type: ignore[no-untyped-def]
    issue = single_issue("name: x\nenv: {id: ALE/Pong-v5, wrappers: [frame_stack, atari]}\n")
    assert issue.path == "env.wrappers"
    assert "as the last wrapper" in issue.message


def test_an_import_path_is_not_a_wrapper(single_issue) -> None:  # type: ignore[no-untyped-def]
    issue = single_issue("name: x\nenv: {id: CartPole-v1, wrappers: ['os:system']}\n")
    assert issue.path == "env.wrappers.0.name"


def test_an_unregistered_package_wrapper_is_refused_at_the_env_check(
    load: Callable[..., ExperimentSpec],
) -> None:
    spec = load("name: x\nenv: {id: CartPole-v1, wrappers: [{name: nobody.shaping}]}\n")
    with pytest.raises(SpecError) as caught:
        check_spec_env(spec)
    issue = caught.value.issues[0]
    assert issue.path == "env.wrappers.0"
    assert "atari" in (issue.fix or "") and "--env-package" in (issue.fix or "")


def test_a_wrapper_that_does_not_fit_the_env_names_it(load: Callable[..., ExperimentSpec]) -> None:
    spec = load("name: x\nenv: {id: CartPole-v1, wrappers: [atari]}\n")
    with pytest.raises(SpecError) as caught:
        check_spec_env(spec)
    assert caught.value.issues[0].path == "env.wrappers.0"
    assert "ppo-platform[atari]" in (caught.value.issues[0].fix or "")


@pytest.mark.usefixtures("own_envs_importable")
def test_an_env_package_registers_its_own_wrapper(load: Callable[..., ExperimentSpec]) -> None:
    import_env_packages([LOCAL_MODULE])
    spec = load(
        f"name: x\nenv: {{id: {LOCAL_ENV}, wrappers: "
        "[{name: ppo_test_local_envs.reward_scale, params: {factor: 3.0}}]}\n"
    )
    env = build_train_env(spec)
    env.reset()
    _, rewards, _, _ = env.step(np.array([0]))
    assert rewards[0] == pytest.approx(-0.03)  # -0.01 per step, scaled 3x


def test_atari_training_and_evaluation_see_four_stacked_84x84_frames(
    load: Callable[..., ExperimentSpec],
) -> None:
    spec = load(ATARI)
    train, evaluate = build_train_env(spec), build_eval_env(spec)
    try:
        for env in (train, evaluate):
            assert isinstance(env, VecTransposeImage)
            assert isinstance(env.venv, VecFrameStack)
            assert env.observation_space.shape == (4, 84, 84)
            assert env.reset().shape == (env.num_envs, 4, 84, 84)
        inner = train.venv.venv.envs[0]
        chain = []
        while hasattr(inner, "env"):
            chain.append(type(inner).__name__)
            inner = inner.env
        # Outermost: the env's own exceptions kept as data; then atari, scores recorded under it.
        assert chain[:2] == ["CatchEnvFaults", "AtariWrapper"] and "Monitor" in chain
    finally:
        train.close()
        evaluate.close()


def test_the_memory_estimate_counts_the_wrapped_observation(
    load: Callable[..., ExperimentSpec],
) -> None:
    stacked = load(ATARI)
    from ppo_platform.envs.ids import check_env_usable

    observation, _ = check_env_usable(
        stacked.env.id, stacked.env.kwargs, None, stacked.env.wrappers
    )
    assert observation == 4 * 84 * 84
    raw, _ = check_env_usable("ALE/Pong-v5")
    assert raw == 210 * 160 * 3
    assert estimate(stacked, observation).memory < estimate(stacked, raw).memory


def test_the_atari_wrapper_on_a_game_that_skips_frames_itself_is_refused(
    load: Callable[..., ExperimentSpec],
) -> None:
    spec = load("name: x\nenv: {id: ALE/Pong-v5, wrappers: [atari]}\n")  # v5 skips 4 frames
    with pytest.raises(SpecError) as caught:
        check_spec_env(spec)
    issue = caught.value.issues[0]
    assert issue.path == "env.wrappers.0"
    assert "16 frames per action" in issue.message
    assert "env.kwargs.frameskip: 1" in (issue.fix or "")


def test_the_service_intake_checks_the_wrappers_too() -> None:
    from ppo_platform.jobs.intake import parse_spec

    spec = parse_spec(ATARI)  # the remembered env check is keyed by the wrappers as well
    assert [w.name for w in spec.env.wrappers] == ["atari", "frame_stack"]
    with pytest.raises(SpecError) as caught:
        parse_spec("name: x\nenv: {id: CartPole-v1, wrappers: [atari]}\n")
    assert caught.value.issues[0].path == "env.wrappers.0"

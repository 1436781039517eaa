"""The doctor corpus (benchmarks/learning/doctor_corpus.py): it answers --help, its fault envs
plant what they claim within a few steps, its table is the size issue #35 asks, its rates count."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from benchmarks.harness.scripts import help_failure
from benchmarks.learning import faulty_envs
from benchmarks.learning.doctor_corpus_cases import BASES, FAULTS, GOOD
from benchmarks.learning.doctor_corpus_report import rates


def test_the_corpus_script_answers_help():
    assert help_failure("benchmarks.learning.doctor_corpus") is None


def _steps(env_id: str, n: int) -> list[tuple[np.ndarray, float]]:
    env = gym.make(env_id)
    env.reset(seed=0)
    env.action_space.seed(0)  # the same actions in every env compared
    seen = []
    for _ in range(n):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        seen.append((np.asarray(obs, dtype=np.float64), float(reward)))
        if terminated or truncated:
            env.reset()
    return seen


def test_nan_observations_appear_at_the_claimed_index_from_the_claimed_step():
    seen = _steps("FaultyNanObs-Pendulum-v1", faulty_envs.ONSET_STEPS + 3)
    before = np.stack([obs for obs, _ in seen[: faulty_envs.ONSET_STEPS - 1]])
    after = np.stack([obs for obs, _ in seen[faulty_envs.ONSET_STEPS - 1 :]])
    assert np.isfinite(before).all()
    assert np.isnan(after[:, faulty_envs.NAN_INDEX]).all()
    others = np.delete(after, faulty_envs.NAN_INDEX, axis=1)
    assert np.isfinite(others).all()


def test_scaled_observations_and_rewards_are_1e4_times_the_base_env():
    base = _steps("Pendulum-v1", 5)
    scaled_obs = _steps("FaultyObsScale-Pendulum-v1", 5)
    scaled_reward = _steps("FaultyRewardScale-Pendulum-v1", 5)
    for (obs, reward), (big_obs, _), (_, big_reward) in zip(
        base, scaled_obs, scaled_reward, strict=True
    ):
        np.testing.assert_allclose(big_obs, obs * 1e4, rtol=1e-6)
        assert big_reward == pytest.approx(reward * 1e4)
    space = gym.make("FaultyObsScale-Pendulum-v1").observation_space
    assert space.high[2] == pytest.approx(8.0 * 1e4)


def test_the_raising_env_raises_its_own_error_at_the_claimed_step():
    env = gym.make("FaultyStepRaises-CartPole-v1")
    env.reset(seed=0)
    steps = 0
    with pytest.raises(faulty_envs.PlantedEnvError, match=f"step {faulty_envs.ONSET_STEPS}"):
        while True:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            if terminated or truncated:
                env.reset()
    assert steps == faulty_envs.ONSET_STEPS - 1


def test_the_lock_pays_its_decoy_on_cashing_out_and_one_past_its_last_stage():
    env = gym.make("Lock-v0")
    env.reset(seed=0)
    assert env.step(0)[1:3] == (0.1, True)  # cash out at stage 0
    env.reset(seed=0)
    outcomes = [env.step(1) for _ in range(5)]
    assert [(r, done) for _, r, done, _, _ in outcomes] == [(0.0, False)] * 4 + [(1.0, True)]
    assert [int(np.argmax(obs)) for obs, *_ in outcomes[:4]] == [1, 2, 3, 4]


def test_the_corpus_is_the_size_the_issue_asks():
    envs = {fault.base for fault in FAULTS}
    assert len(FAULTS) * 2 >= 14 and len(envs) >= 5
    assert {"lm", "halfcheetah"} & envs and ({"hopper", "halfcheetah"} & envs)
    assert "lm" in envs
    assert len(GOOD) >= 12
    assert all(fault.base in BASES for fault in FAULTS)
    assert all(f.env is None or f.env in gym.registry for f in FAULTS)


def test_rates_count_named_first_false_alarms_and_recoveries():
    def fault(detected: bool, fixable: bool, recovered: bool | None) -> dict:
        row = {"group": "fault", "name": "x", "seed": 0, "detected": detected}
        return {**row, "fixable": fixable, "recovered": recovered, "lag_updates": 2}

    rows = [
        fault(True, True, True),
        fault(True, True, False),
        fault(False, False, None),
        {"group": "good", "false_alarm": True},
        {"group": "good", "false_alarm": False},
    ]
    found = rates(rows)
    assert found["detection"] == "2/3 (67%)"
    assert found["false_alarms"] == "1 of 2"
    assert found["recovery"] == "1/2 (50%)"
    assert found["missed"] == ["x seed 0"]

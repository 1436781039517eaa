"""import-zoo for the zoo's Atari and MuJoCo entries: the `atari` entry applied to any Atari id
with its wrappers, CnnPolicy heads as SB3 builds them, v4 entries applied to v5, and entries
converted as data when the env's extra is missing here."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppo_platform.envs import extras
from ppo_platform.interop import import_zoo

ZOO = Path(__file__).resolve().parents[2] / "fixtures" / "zoo_ppo.yml"


def test_the_atari_entry_applies_to_an_ale_v5_game_with_its_wrappers() -> None:
    result = import_zoo(ZOO, "ALE/Breakout-v5")  # checked against the real env too
    env = result.spec.env
    assert [w.name for w in env.wrappers] == ["atari", "frame_stack"]
    assert env.wrappers[1].n == 4
    assert env.kwargs == {"frameskip": 1}  # v5 skips 4 frames itself
    assert result.spec.policy.net_arch == []  # SB3's CnnPolicy: no hidden layers after the CNN
    assert (env.n_envs, result.spec.rollout.n_steps, result.spec.update.epochs) == (8, 128, 4)
    assert any("`atari` entry" in note for note in result.notes)
    assert any("frameskip is 1" in note for note in result.notes)


def test_a_cnn_policy_keeps_the_net_arch_its_entry_gives(tmp_path: Path) -> None:
    path = tmp_path / "ppo.yml"
    path.write_text(
        "ALE/Pong-v5:\n  policy: CnnPolicy\n  policy_kwargs: 'dict(net_arch=[128])'\n"
        "  env_wrapper: [stable_baselines3.common.atari_wrappers.AtariWrapper:\n"
        "      {terminal_on_life_loss: false}]\n  frame_stack: 2\n"
    )
    spec = import_zoo(path, "ALE/Pong-v5").spec
    assert spec.policy.net_arch == [128]
    assert spec.env.wrappers[0].terminal_on_life_loss is False
    assert (spec.env.wrappers[1].name, spec.env.wrappers[1].n) == ("frame_stack", 2)


def test_a_v4_mujoco_entry_is_applied_to_v5_with_a_note() -> None:
    result = import_zoo(ZOO, "HalfCheetah-v5")
    assert result.spec.env.id == "HalfCheetah-v5"
    assert result.spec.update.learning_rate.start == pytest.approx(2.0633e-05)
    assert result.spec.update.epochs == 20
    assert any("HalfCheetah-v4 entry applied to HalfCheetah-v5" in n for n in result.notes)


def test_an_env_whose_extra_is_missing_converts_as_data_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As on a machine without the mujoco extra: the module the extra installs is not found.
    monkeypatch.setitem(extras.EXTRA_MODULES, "mujoco", "no_such_mujoco_module")
    extras._installed.cache_clear()
    try:
        result = import_zoo(ZOO, "HalfCheetah-v5")
    finally:
        extras._installed.cache_clear()
    warning = next(n for n in result.notes if n.startswith("warning:"))
    assert "HalfCheetah-v5 cannot be created on this machine" in warning
    assert "pip install 'ppo-platform[mujoco]'" in warning

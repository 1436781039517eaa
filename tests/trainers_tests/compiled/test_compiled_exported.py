"""The traced programs kept on disk (jax.export): a program loaded from its entry trains the
same numbers as one traced in the process; an entry belongs to one configuration; a broken
entry is traced again and replaced; an unsafe folder keeps nothing; disk stays bounded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

from ppo_platform.trainers.compiled import exported
from ppo_platform.trainers.compiled.exported import ExportStore
from ppo_platform.trainers.compiled.ppo import CompiledConfig, CompiledPPO


def _config(learning_rate: float = 1e-3) -> CompiledConfig:
    return CompiledConfig(
        "CartPole-v1", 4, 16, 2, 32, 64 * 6, (learning_rate, 0.0, True), (0.2, 0.0, True), chunk=3
    )


def _trained(program: CompiledPPO) -> dict[str, np.ndarray]:
    return program.train([1, 2]).metrics


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jaxexport"))


def test_a_kept_program_trains_the_numbers_a_traced_one_does(tmp_path: Path) -> None:
    traced = _trained(CompiledPPO(_config()))
    store = ExportStore.at(tmp_path / "exported")
    assert store is not None
    first = _trained(CompiledPPO(_config(), store))  # exports, keeps
    kept = _entries(store.folder)
    assert len(kept) == 2  # the init and the chunk program
    again = _trained(CompiledPPO(_config(), store))  # loads what was kept
    assert _entries(store.folder) == kept
    for name, values in traced.items():
        np.testing.assert_array_equal(first[name], values, err_msg=name)
        np.testing.assert_array_equal(again[name], values, err_msg=name)
    # Another configuration is an entry of its own (its learning rate is in the program).
    other = _trained(CompiledPPO(_config(learning_rate=3e-4), store))
    assert len(_entries(store.folder)) == 4
    assert not np.array_equal(other["train/value_loss"], traced["train/value_loss"])


def test_a_broken_entry_is_traced_again_and_replaced(tmp_path: Path) -> None:
    store = ExportStore(tmp_path)
    expected = _trained(CompiledPPO(_config(), store))
    for entry in _entries(tmp_path):
        entry.write_bytes(b"not a program")
    trained = _trained(CompiledPPO(_config(), store))
    np.testing.assert_array_equal(trained["train/loss"], expected["train/loss"])
    assert all(entry.stat().st_size > 1000 for entry in _entries(tmp_path))


def test_a_folder_others_may_write_to_keeps_nothing(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    assert ExportStore.at(folder) is None
    assert (
        f"traced programs are not kept: {folder} is writable by others" in capsys.readouterr().err
    )


def test_past_its_bound_the_least_recently_used_entries_go(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(exported, "MAX_ENTRIES", 3)
    store = ExportStore(tmp_path)
    CompiledPPO(_config(1e-3), store).prepare(1)  # two entries: init, then chunk
    older = set(_entries(tmp_path))
    CompiledPPO(_config(2e-3), store).prepare(1)  # two more: the first of all goes
    left = set(_entries(tmp_path))
    assert len(left) == 3 and len(left & older) == 1 and len(left - older) == 2

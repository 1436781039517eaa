"""The compiled-floor benchmark: K epochs against one on real compiled programs; the achieved
rate is the counted arithmetic of the extra epochs over their seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("jax")

from benchmarks.throughput import compiled_floor


def test_the_floor_counts_the_extra_epochs_arithmetic(tmp_path: Path) -> None:
    # SB3's MlpPolicy on CartPole: (4*64 + 64*64 + 64*2) + (4*64 + 64*64 + 64) multiply-adds.
    assert compiled_floor.flop_per_sample() == 3 * 2 * (4480 + 4416)
    compiled_floor.main(
        ["--steps", "2048", "--epochs", "3", "--seeds", "1", "2", "--rounds", "1",
         "--out", str(tmp_path / "floor")]
    )  # fmt: skip
    result = json.loads((tmp_path / "floor.json").read_text())
    assert result["updates"] == 8 and [r["seeds"] for r in result["rows"]] == [1, 2]
    for row in result["rows"]:
        (k1,), (k3,) = row["train_cpu_s_k1"], row["train_cpu_s_k3"]
        (epoch_ms,), (rate,) = row["epoch_ms_per_seed"], row["gflops_per_core"]
        assert epoch_ms == pytest.approx(1e3 * (k3 - k1) / (8 * 2 * row["seeds"]))
        assert rate == pytest.approx(result["flop_per_sample"] * 256 / (epoch_ms / 1e3) / 1e9)
    assert "| 2 |" in (tmp_path / "floor.md").read_text()

"""The doctor-share benchmark times the doctor's entry points inside real runs: each run
records the doctor's metrics once per update and diagnoses once at its end, and the share is
the doctor's seconds over the run's wall."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.overhead import doctor_share


def test_each_run_counts_the_doctors_calls_and_its_share(tmp_path: Path) -> None:
    doctor_share.main(["--steps", "768", "--rounds", "1", "--out", str(tmp_path / "share")])
    result = json.loads((tmp_path / "share.json").read_text())
    assert [row["variant"] for row in result["rows"]] == list(doctor_share.VARIANTS)
    for row in result["rows"]:
        (sample,) = row["samples"]
        assert sample["record_n"] == 3  # 768 steps of 8 envs x 32: three updates
        assert sample["session_diagnosis_n"] >= 1 and sample["write_diagnosis_n"] == 1
        assert 0 < sample["doctor_s"] < sample["wall_s"]
        assert sample["share"] == sample["doctor_s"] / sample["wall_s"]
    page = (tmp_path / "share.md").read_text()
    assert "| healthy (specs/cartpole.yaml) |" in page and "doctor's share" in page

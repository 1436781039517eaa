"""The workload registry: one entry per `algorithm` in both tables, every entry reachable from
spec data, and a gym run's way from the CLI to its trainer short and free of other workloads."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from ppo_platform.errors import SpecError
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LM_ALGORITHM, LMExperimentSpec
from ppo_platform.spec.workloads import SPEC_WORKLOADS, spec_workload, validate_any
from ppo_platform.workloads import WORKLOADS, workload_of

ROOT = Path(__file__).resolve().parents[3]
PLATFORM = ROOT / "platform" / "ppo_platform"


def test_the_two_tables_name_the_same_workloads_and_every_algorithm_of_the_schemas() -> None:
    gym_algorithms = set(get_args(ExperimentSpec.model_fields["algorithm"].annotation))
    assert set(WORKLOADS) == set(SPEC_WORKLOADS) == gym_algorithms | {LM_ALGORITHM}
    for name, workload in WORKLOADS.items():
        assert workload.algorithm == name and workload.spec is SPEC_WORKLOADS[name]


@pytest.mark.parametrize("algorithm", ["ppo", "ppo_kl", "a2c"])
def test_gym_data_validates_as_its_workload(algorithm: str) -> None:
    data = {"name": "w", "env": {"id": "CartPole-v1"}, "algorithm": algorithm}
    spec = validate_any(data)
    assert isinstance(spec, ExperimentSpec) and spec.algorithm == algorithm
    assert workload_of(spec).algorithm == algorithm
    assert workload_of(spec).resume is not None  # gym runs keep checkpoints
    assert spec_workload(data).planned(spec) == spec.budget.total_timesteps


def test_lm_workload_keeps_no_checkpoints_and_counts_updates() -> None:
    entry = WORKLOADS[LM_ALGORITHM]
    assert entry.spec.spec_type is LMExperimentSpec and entry.resume is None


def test_an_unknown_algorithm_is_refused_naming_the_field_and_the_choices() -> None:
    with pytest.raises(SpecError) as caught:
        validate_any({"name": "w", "env": {"id": "CartPole-v1"}, "algorithm": "dqn"})
    issue = next(i for i in caught.value.issues if i.path == "algorithm")
    assert "dqn" in str(issue.value) or "dqn" in issue.message
    assert "ppo" in issue.message or "ppo" in (issue.fix or "")


def _calls_and_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_a_gym_run_reaches_its_trainer_through_four_platform_modules_none_for_lm() -> None:
    """cli/app.py -> workloads/registry.py -> training/runner.py -> training/algorithms.py ->
    trainers: each hop is an import the next module's name is in, and none is an `lm_` one."""
    hops = [
        (PLATFORM / "cli/app.py", "ppo_platform.workloads.run_experiment"),
        (PLATFORM / "workloads/registry.py", "ppo_platform.training.runner.run_spec"),
        (PLATFORM / "training/runner.py", "ppo_platform.training.algorithms.build_model"),
        (PLATFORM / "training/algorithms.py", "ppo_platform.trainers.ppo.PlatformPPO"),
    ]
    for path, target in hops:
        assert target in _calls_and_imports(path), f"{path.name} no longer imports {target}"
        assert not path.name.startswith("lm_")
    assert "lm_" not in "".join(target for _, target in hops)

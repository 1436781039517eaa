"""`policy.device` and `evaluation.video` ask things of the machine: refused at validation when
it cannot give them, with the field, the value and the fix."""

from __future__ import annotations

import pytest
from gymnasium import spaces
from typer.testing import CliRunner

from ppo_platform.cli import EXIT_BAD_INPUT, app
from ppo_platform.errors import SpecError
from ppo_platform.execution.base import Task
from ppo_platform.execution.ray_executor import task_options
from ppo_platform.settings import get_settings
from ppo_platform.spec import machine
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.training.algorithms import training_device

IMAGE = spaces.Box(0, 255, (84, 84, 4), dtype="uint8")
VECTOR = spaces.Box(-1.0, 1.0, (4,))


def test_cuda_is_refused_at_validation_where_torch_sees_no_gpu(minimal_spec: str) -> None:
    if machine.cuda_device_count():
        pytest.skip("this machine has a GPU: the refusal cannot happen here")
    with pytest.raises(SpecError) as caught:
        load_spec_text(minimal_spec + "policy: {device: cuda}\n")
    [issue] = caught.value.issues
    assert (issue.path, issue.value, issue.rule) == ("policy.device", "cuda", "machine_capability")
    assert "torch sees none on this machine" in issue.message
    assert "use `auto`" in (issue.fix or "")


def test_validate_command_exits_2_naming_the_device(write_spec, minimal_spec: str) -> None:
    if machine.cuda_device_count():
        pytest.skip("this machine has a GPU")
    path = write_spec(minimal_spec)
    result = CliRunner().invoke(app, ["validate", str(path), "--set", "policy.device=cuda"])
    assert result.exit_code == EXIT_BAD_INPUT
    assert "policy.device" in result.stderr and "CUDA GPU" in result.stderr


def test_cuda_is_left_to_the_cluster_on_ray(
    minimal_spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PPO_PLATFORM_EXECUTOR", "ray")
    get_settings.cache_clear()
    try:
        spec = load_spec_text(minimal_spec + "policy: {device: cuda}\n")
    finally:
        get_settings.cache_clear()
    assert spec.policy.device == "cuda"


def test_device_and_video_at_their_defaults_keep_the_hash(minimal_spec: str) -> None:
    plain = load_spec_text(minimal_spec)
    spelled = load_spec_text(minimal_spec + "policy: {device: auto}\nevaluation: {video: 0}\n")
    assert plain.policy.device == "auto" and plain.evaluation.video == 0
    assert spelled.spec_hash() == plain.spec_hash()
    assert load_spec_text(minimal_spec + "policy: {device: cpu}\n").spec_hash() != (
        plain.spec_hash()
    )


def test_video_without_the_encoder_is_refused(
    minimal_spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(machine, "VIDEO_MODULES", ("imageio", "no_such_encoder_module"))
    with pytest.raises(SpecError) as caught:
        load_spec_text(minimal_spec + "evaluation: {video: 2}\n")
    [issue] = caught.value.issues
    assert (issue.path, issue.value) == ("evaluation.video", 2)
    assert "no_such_encoder_module" in issue.message
    assert "ppo-platform[video]" in (issue.fix or "")


def test_auto_trains_mlp_policies_on_the_cpu(minimal_spec: str) -> None:
    spec = load_spec_text(minimal_spec)
    assert training_device(spec, VECTOR) == "cpu"
    assert training_device(spec.model_copy(deep=True), IMAGE) == (
        "cuda" if machine.cuda_device_count() else "cpu"
    )


def test_auto_puts_a_cnn_policy_on_the_gpu_when_torch_sees_one(
    minimal_spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    spec = load_spec_text(minimal_spec)
    assert training_device(spec, IMAGE) == "cuda"
    assert training_device(spec, VECTOR) == "cpu"
    cpu = load_spec_text(minimal_spec + "policy: {device: cpu}\n")
    assert training_device(cpu, IMAGE) == "cpu"


def test_a_ray_task_asks_for_a_gpu_when_its_run_trains_on_cuda() -> None:
    assert machine.task_gpus("cuda") == 1.0
    assert machine.task_gpus("auto") == machine.task_gpus("cpu") == 0.0
    on_gpu = task_options(Task("k", print, num_gpus=machine.task_gpus("cuda")), num_gpus=0.0)
    assert on_gpu["num_gpus"] == 1.0
    assert "num_gpus" not in task_options(Task("k", print), num_gpus=0.0)
    # The executor already gives every task more (PPO_PLATFORM_RAY_NUM_GPUS): left to it.
    assert "num_gpus" not in task_options(Task("k", print, num_gpus=1.0), num_gpus=2.0)

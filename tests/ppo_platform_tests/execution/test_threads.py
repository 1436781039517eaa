"""Thread pinning: one function, used everywhere a process limits its compute threads."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch

import ppo_platform
from ppo_platform.execution.threads import THREAD_ENV_VARS, pin_threads

PACKAGE = Path(ppo_platform.__file__).resolve().parent


def test_pin_threads_sets_the_environment_and_a_loaded_torch(monkeypatch):
    for name in THREAD_ENV_VARS:
        monkeypatch.setenv(name, "8")
    pin_threads(2)
    assert [os.environ[name] for name in THREAD_ENV_VARS] == ["2", "2", "2"]
    assert torch.get_num_threads() == 2


def test_pin_threads_refuses_zero():
    with pytest.raises(ValueError, match="at least 1"):
        pin_threads(0)


def test_threads_are_pinned_only_in_execution_threads():
    pattern = re.compile(r"set_num_threads|OMP_NUM_THREADS|MKL_NUM_THREADS|OPENBLAS_NUM_THREADS")
    pinning = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    )
    assert pinning == ["execution/threads.py"]

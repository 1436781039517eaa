"""The test tiers (`make test-quick`, `make test`): which tests are unit tests and which are
integration or system tests, decided by where a test lives, so a new test lands in a tier
without anyone marking it.

- `slow` (marked by hand): end-to-end runs that train for more than a few seconds.
- `integration` (given here): tests that start a server, a cluster, a child process tree or a
  browser, build the docs site, or train real runs end to end through the CLI or a runner;
  the folders and modules below.
- the rest are unit tests: `make test-quick` (`pytest -m "not slow and not integration"`)
  runs them, in <= 3 minutes on 2 cores (measured on docs/design/layout.md).

`make test` runs every tier; CI calls it.
"""

from __future__ import annotations

from pathlib import PurePosixPath

# Relative to tests/: a folder covers every module under it.
INTEGRATION = (
    "api_tests",
    "cluster_tests",
    "docs_tests",
    "benchmarks_tests",
    "test_installed_namespace.py",
    "ppo_platform_tests/hostile",
    "ppo_platform_tests/cli",
    "ppo_platform_tests/jobs",
    "ppo_platform_tests/sweeps",
    "ppo_platform_tests/tuning",
    "ppo_platform_tests/tracking",
    "ppo_platform_tests/envs",
    "ppo_platform_tests/interop",
    "ppo_platform_tests/execution",
    "ppo_platform_tests/training",
    "ppo_platform_tests/workloads",
    "ppo_platform_tests/doctor/test_real_runs.py",
    "ppo_platform_tests/doctor/test_tensorboard_logs.py",
    "ppo_platform_tests/test_process_exit.py",
    "trainers_tests/compiled/test_compiled_training.py",
    "trainers_tests/test_plain_sb3_load.py",
)


def is_integration(relative: str) -> bool:
    """Whether the test module at `relative` (a path under tests/) is in the integration tier."""
    parts = PurePosixPath(relative).parts
    return any(parts[: len(PurePosixPath(entry).parts)] == PurePosixPath(entry).parts
               for entry in INTEGRATION)  # fmt: skip

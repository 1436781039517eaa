"""The bounds every job runs under, enforced from outside the code it runs.

A job runs user-steered code (an env's step, a reward, a model): nothing inside it may be
trusted to notice a cancel or a deadline. So each bound has an enforcer that does not need
the job's cooperation:

- **wall clock**: the dispatcher ends the job `failed` with the reason once its deadline
  passes, asks it to stop, and kills its process group after the cancel grace;
- **CPU**: the kernel (RLIMIT_CPU, set when the job process starts) sends SIGXCPU at the bound
  and SIGKILL a few seconds later, to each process of the job;
- **its server**: a dead-man switch (alarm(2), default action: terminate) that the job's
  watcher thread renews while the server that started it lives. When the server is gone the
  watcher stops the job and stops renewing; a job stuck where its threads never run (code that
  holds the interpreter) is ended by the kernel all the same, within the lease.

The operator sets them (`ServiceSettings`: job_max_seconds, job_min_steps_per_second,
job_cpu_seconds_per_wall_second, lease_seconds); docs/guides/security.md lists them.
"""

from __future__ import annotations

import contextlib
import resource
import signal
import threading
from dataclasses import dataclass

from ppo_platform.jobs.config import ServiceSettings

JOB_BASE_SECONDS = 600.0  # start-up, evaluation and tracking on top of the training itself
CPU_KILL_AFTER_SECONDS = 5  # between SIGXCPU (the soft limit) and SIGKILL (the hard one)


@dataclass(frozen=True)
class JobBounds:
    """One job's bounds, computed by the dispatcher and handed to the job process."""

    wall_seconds: float
    cpu_seconds: int
    lease_seconds: int

    def reason(self, signum: int | None) -> str | None:
        """Why a job process killed by `signum` ended, when a bound killed it."""
        if signum == signal.SIGXCPU:
            return (
                f"it used its CPU bound of {self.cpu_seconds} s (PPO_PLATFORM_JOB_MAX_SECONDS "
                "x PPO_PLATFORM_JOB_CPU_SECONDS_PER_WALL_SECOND) and was ended"
            )
        if signum == signal.SIGALRM:
            return (
                f"its process stopped answering for {self.lease_seconds} s (stuck in code that "
                "never lets its threads run, e.g. an env's step) and was ended"
            )
        return None

    def wall_reason(self) -> str:
        return (
            f"it ran past its wall-clock bound of {self.wall_seconds:.0f} s "
            "(PPO_PLATFORM_JOB_MAX_SECONDS, by default derived from its budget) and was stopped"
        )


def job_bounds(service: ServiceSettings, total_timesteps: int) -> JobBounds:
    """The bounds of a job that trains `total_timesteps` env steps (an LM job: tokens) in all:
    the operator's fixed wall-clock bound, or one derived from the budget at the slowest
    training the operator allows; CPU in proportion."""
    wall = service.job_max_seconds or (
        JOB_BASE_SECONDS + total_timesteps / service.job_min_steps_per_second
    )
    cpu = max(1, int(wall * service.job_cpu_seconds_per_wall_second))
    return JobBounds(wall, cpu, int(service.lease_seconds))


def limit_this_process(bounds: JobBounds) -> None:
    """In the job's process, at its start: the kernel's CPU bound (inherited by every process
    it starts, each counted alone), and no core file when it is hit."""
    hard = bounds.cpu_seconds + CPU_KILL_AFTER_SECONDS
    with contextlib.suppress(ValueError, OSError):  # a lower limit already set stays
        resource.setrlimit(resource.RLIMIT_CPU, (bounds.cpu_seconds, hard))
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class DeadManSwitch:
    """alarm(2) renewed while the job's server lives: if it is not renewed for `seconds`, the
    kernel ends the process (SIGALRM's default action), whatever its code is doing. Only in a
    job's own process: an alarm is per process and SIGALRM gets its default action here."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
        self.renew()

    def renew(self) -> None:
        signal.alarm(self.seconds)

    def disarm(self) -> None:
        signal.alarm(0)

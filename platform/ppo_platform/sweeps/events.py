"""What a sweep tells whoever runs it, as data: each event a frozen dataclass with the values
(run ids, counts, outcomes) as fields, and `describe()` for the line a person reads.

Listeners read the fields, never the text: the CLI prints `describe()`, the job service stores
the fields as job events and takes the parent run id from `SweepStarted.parent_run_id`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ppo_platform.sweeps.expand import SweepMember


@dataclass(frozen=True)
class MemberOutcome:
    """How one member ended in this invocation (or `skipped`: finished by an earlier one)."""

    member: SweepMember
    status: str  # FINISHED | FAILED | KILLED
    run_id: str | None = None
    final_eval_mean: float | None = None
    error: str | None = None
    seconds: float | None = None
    pid: int | None = None
    skipped: bool = False

    def line(self) -> str:
        name = self.member.spec.name
        if self.skipped:
            return f"{name}: already finished (run {self.run_id}), skipped"
        if self.error:
            return f"{name}: FAILED: {self.error}"
        score = "-" if self.final_eval_mean is None else f"{self.final_eval_mean:.2f}"
        secs = "" if self.seconds is None else f" in {self.seconds:.1f} s"
        # An LM run's evaluation is the mean reward of greedy responses to held-out prompts.
        what = "held-out reward" if self.member.spec.algorithm == "ppo_lm" else "eval return"
        return f"{name}: {self.status}, final {what} {score}{secs} (run {self.run_id})"


@dataclass(frozen=True)
class SweepStarted:
    """The parent run is open; `to_train` members are about to be handed to the workers."""

    name: str
    parent_run_id: str
    members: int  # every member of the sweep
    variants: int
    seeds: int
    finished_earlier: int  # members an earlier invocation finished (skipped now)
    workers: int
    resumed: bool

    @property
    def to_train(self) -> int:
        return self.members - self.finished_earlier

    def describe(self) -> str:
        resumed = f" (resumed: {self.finished_earlier} already finished)" if self.resumed else ""
        return (
            f"sweep {self.name}: {self.members} runs ({self.variants} variants x {self.seeds} "
            f"seeds), parent run {self.parent_run_id}{resumed}; {self.to_train} to train on "
            f"{self.workers} worker(s)"
        )


@dataclass(frozen=True)
class MemberFinished:
    """One member ended (finished, failed or killed) with its MLflow run id in `outcome`."""

    outcome: MemberOutcome
    trained: int  # members that ended in this invocation, this one included
    to_train: int
    finished_earlier: int

    @property
    def runs_done(self) -> int:
        return self.finished_earlier + self.trained

    @property
    def runs_total(self) -> int:
        return self.finished_earlier + self.to_train

    def describe(self) -> str:
        return f"[{self.trained}/{self.to_train}] {self.outcome.line()}"


@dataclass(frozen=True)
class MemberRestarted:
    """A member's worker process or node died: it runs again from its last checkpoint."""

    name: str
    reason: str

    def describe(self) -> str:
        return f"{self.name}: its worker died ({self.reason}); running it again"


@dataclass(frozen=True)
class SweepWarning:
    """Something the user should know that changes nothing (too many workers, say)."""

    message: str

    def describe(self) -> str:
        return f"warning: {self.message}"


SweepEvent = SweepStarted | MemberFinished | MemberRestarted | SweepWarning
SweepListener = Callable[[SweepEvent], None]

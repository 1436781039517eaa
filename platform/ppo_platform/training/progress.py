"""Progress reporting for the CLI: a live bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

EventKind = Literal["started", "update", "eval", "alert", "checkpoint", "status"]


@dataclass(frozen=True)
class ProgressEvent:
    """What the runner reports while it trains; the API stores these for job status.

    `started` comes first and carries the MLflow `run_id` (a run that fails reports it too,
    before the error reaches the caller), so no listener looks its run up.
    """

    kind: EventKind
    timesteps: int
    total_timesteps: int
    fps: float = math.nan
    ep_rew_mean: float = math.nan
    approx_kl: float = math.nan
    clip_fraction: float = math.nan
    explained_variance: float = math.nan
    kl_beta: float = math.nan  # ppo_kl's adaptive beta (ppo_lm: the KL penalty's beta)
    kl_ref: float = math.nan  # ppo_lm: lm/kl_ref, the KL to the reference model
    eval_mean: float = math.nan
    message: str = ""
    run_id: str = ""  # `started` only
    resolved: dict[str, str] = field(default_factory=dict)  # `started`: training/resolved.py
    # ppo_lm: `timesteps` counts updates, `ep_rew_mean` is the mean reward of the update's
    # responses, `kl_ref` the KL to the reference model (docs/guides/language-models.md).
    language_model: bool = False


class ProgressReporter(Protocol):
    def __call__(self, event: ProgressEvent) -> None: ...

    def close(self) -> None: ...


def describe_resolved(resolved: dict[str, str]) -> str:
    """One line: vectorization (and why), device, threads, env packages, library versions; for
    a language model: the model, its tokenizer, reference and reward instead of envs."""
    versions = ", ".join(
        f"{key.removeprefix('version.')} {value}"
        for key, value in resolved.items()
        if key.startswith("version.") and value != "not installed"
    )
    if "model.architecture" in resolved:
        return (
            f"model {resolved['model.architecture']} ({resolved['model.parameters']} "
            f"parameters, {resolved.get('dtype')}) from {resolved.get('model.config')}; "
            f"tokenizer {resolved.get('tokenizer')}; reference {resolved.get('reference')}; "
            f"reward {resolved.get('reward')}; device {resolved.get('device')}, "
            f"{resolved.get('torch_threads')} torch thread(s); {versions}"
        )
    return (
        f"{resolved.get('vectorization')} envs ({resolved.get('vectorization_reason')}); device "
        f"{resolved.get('device')}, {resolved.get('torch_threads')} torch thread(s); env "
        f"packages: {resolved.get('env_packages')}; {versions}"
    )


def describe_eval(event: ProgressEvent) -> str:
    """An evaluation's line: mean return at an env step (mean reward at an update, for LMs)."""
    if event.language_model:
        return f"eval  update {event.timesteps}: mean reward {event.eval_mean:.3f}"
    return f"eval  step {event.timesteps}: mean return {event.eval_mean:.2f}"


def _fmt(value: float, spec: str) -> str:
    return "-" if math.isnan(value) else format(value, spec)


def describe(event: ProgressEvent) -> str:
    if event.language_model:
        return (
            f"update {event.timesteps}/{event.total_timesteps} "
            f"{_fmt(event.fps, '.2f')} updates/s reward {_fmt(event.ep_rew_mean, '.3f')} "
            f"KL to reference {_fmt(event.kl_ref, '.4f')} clip {_fmt(event.clip_fraction, '.3f')}"
        )
    return (
        f"step {event.timesteps}/{event.total_timesteps} fps {_fmt(event.fps, '.0f')} "
        f"return {_fmt(event.ep_rew_mean, '.1f')} kl {_fmt(event.approx_kl, '.4f')} "
        f"clip {_fmt(event.clip_fraction, '.3f')}"
    )


class PlainReporter:
    """One line per ~`every_seconds` plus every eval, alert and status (logs, CI, pipes)."""

    def __init__(self, every_seconds: float = 5.0, quiet: bool = False) -> None:
        self.every_seconds, self.quiet = every_seconds, quiet
        self._last = 0.0

    def __call__(self, event: ProgressEvent) -> None:
        if event.kind == "started" and event.resolved and not self.quiet:
            print(f"resolved: {describe_resolved(event.resolved)}", flush=True)
        if (self.quiet and event.kind != "alert") or event.kind == "started":
            return
        if event.kind == "update":
            now = time.monotonic()
            if now - self._last < self.every_seconds:
                return
            self._last = now
            print(describe(event), flush=True)
        elif event.kind == "eval":
            print(describe_eval(event), flush=True)
        else:
            print(
                f"{event.kind}: {event.message}",
                file=sys.stderr if event.kind == "alert" else sys.stdout,
                flush=True,
            )

    def close(self) -> None:
        pass


class RichReporter:
    """A live progress bar with timesteps, fps, latest return, KL and clip fraction."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[stats]}"),
            console=self.console,
        )
        self.task = self.progress.add_task("train", total=None, stats="")
        self.progress.start()

    def __call__(self, event: ProgressEvent) -> None:
        if event.kind == "update":
            stats = (
                describe(event).split(" ", 2)[2]
                if event.language_model
                else f"fps {_fmt(event.fps, '.0f')} return {_fmt(event.ep_rew_mean, '.1f')} "
                f"kl {_fmt(event.approx_kl, '.4f')} clip {_fmt(event.clip_fraction, '.3f')}"
            )
            self.progress.update(
                self.task, completed=event.timesteps, total=event.total_timesteps, stats=stats
            )
        elif event.kind == "eval":
            self.console.print(describe_eval(event))
        elif event.kind == "alert":
            self.console.print(f"[yellow]alert[/]: {event.message}")
        elif event.kind == "started" and event.resolved:
            self.console.print(f"resolved: {describe_resolved(event.resolved)}")
        elif event.kind != "started":
            self.console.print(f"{event.kind}: {event.message}")

    def close(self) -> None:
        self.progress.stop()


def make_reporter(quiet: bool = False) -> RichReporter | PlainReporter:
    """A live bar on an interactive terminal, plain lines otherwise."""
    if not quiet and sys.stderr.isatty():
        return RichReporter()
    return PlainReporter(quiet=quiet)

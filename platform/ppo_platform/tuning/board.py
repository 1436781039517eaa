"""Terminal progress of a study: trials done / running / pruned / failed and the best value.

It reads the shared storage, so it shows every worker's trials (other machines' too). On a
terminal a live status line; otherwise plain lines, printed only when something changed.
"""

from __future__ import annotations

import math
import sys
import threading
from collections import Counter
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import optuna


def status_line(study: optuna.Study, n_trials: int) -> str:
    """'trials 7/20: 4 complete, 2 pruned, 1 failed, 2 running | best 487.30 (trial 5)'."""
    counts = Counter(t.state.name for t in study.get_trials(deepcopy=False))
    done = counts["COMPLETE"] + counts["PRUNED"] + counts["FAIL"]
    best = _best(study)
    best_text = "-" if best is None else f"{best[1]:.4g} (trial {best[0]})"
    return (
        f"trials {done}/{n_trials}: {counts['COMPLETE']} complete, {counts['PRUNED']} pruned, "
        f"{counts['FAIL']} failed, {counts['RUNNING']} running | best {best_text}"
    )


def _best(study: optuna.Study) -> tuple[int, float] | None:
    try:
        best = study.best_trial
    except ValueError:  # no completed trial yet
        return None
    return best.number, float(best.value) if best.value is not None else math.nan


def trial_line(trial: optuna.trial.FrozenTrial) -> str:
    """One finished trial, for the log."""
    attrs = trial.user_attrs
    if trial.state.name == "COMPLETE":
        seeds = ", ".join(f"{v:.4g}" for v in attrs.get("seed_values", []))
        text = f"trial {trial.number} complete: value {trial.value:.4g} (seeds: {seeds})"
    elif trial.state.name == "PRUNED":
        text = f"trial {trial.number} {attrs.get('pruned_reason', 'pruned')}"
    else:
        text = f"trial {trial.number} failed: {failure_reason(trial).splitlines()[0]}"
    params = ", ".join(f"{k}={_short(v)}" for k, v in trial.params.items())
    return f"{text} [{params}]"


def failure_reason(trial: optuna.trial.FrozenTrial) -> str:
    """Why a trial failed: its recorded reason, an interruption, or a dead worker."""
    if trial.user_attrs.get("failure"):
        return str(trial.user_attrs["failure"])
    if trial.user_attrs.get("interrupted"):
        return "interrupted"
    return "stale: its worker stopped (no heartbeat), so the trial was failed and retried"


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


class StudyBoard:
    """Polls the study every `interval` seconds until `stop` is set."""

    def __init__(
        self,
        study: optuna.Study,
        n_trials: int,
        stream: TextIO | None = None,
        interval: float = 2.0,
        live: bool | None = None,
    ) -> None:
        self.study, self.n_trials, self.interval = study, n_trials, interval
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.seen: set[int] = {
            t.number for t in study.get_trials(deepcopy=False) if t.state.is_finished()
        }
        self.last_line = ""
        self._console: Any = None
        self._live: Any = None

    def poll(self) -> None:
        """Print newly finished trials and the status line (if it changed)."""
        for trial in self.study.get_trials(deepcopy=False):
            if trial.state.is_finished() and trial.number not in self.seen:
                self.seen.add(trial.number)
                self._print(trial_line(trial))
        line = status_line(self.study, self.n_trials)
        if line != self.last_line:
            self.last_line = line
            if self._live is not None:
                from rich.text import Text

                self._live.update(Text(line))
            else:
                self._print(line)

    def _print(self, text: str) -> None:
        if self._console is not None:
            self._console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream, flush=True)

    def run(self, stop: threading.Event) -> None:
        """Poll until `stop` is set, then once more."""
        if self.live:
            from rich.console import Console
            from rich.live import Live

            self._console = Console(file=self.stream)
            self._live = Live(console=self._console, refresh_per_second=2, transient=False)
            self._live.start()
        try:
            while not stop.wait(self.interval):
                self.poll()
            self.poll()
        finally:
            if self._live is not None:
                self._live.stop()

    def start(self) -> tuple[threading.Thread, threading.Event]:
        """Run in a background thread; set the returned event to stop it."""
        stop = threading.Event()
        thread = threading.Thread(target=self.run, args=(stop,), daemon=True, name="study-board")
        thread.start()
        return thread, stop

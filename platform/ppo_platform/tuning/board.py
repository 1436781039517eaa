"""A study's progress: trials done / running / pruned / failed and the best value, as typed
events (`tuning/events.py`) to a listener and as lines on the terminal.

It reads the shared storage, so it sees every worker's trials (other machines' too). On a
terminal a live status line; otherwise plain lines, printed only when something changed.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

from ppo_platform.tuning.events import (
    StudyListener,
    StudyProgressed,
    TrialFinished,
)
from ppo_platform.tuning.events import failure_reason as failure_reason  # re-exported

if TYPE_CHECKING:
    import optuna


def status_line(study: optuna.Study, n_trials: int) -> str:
    """'trials 7/20: 4 complete, 2 pruned, 1 failed, 2 running | best 487.30 (trial 5)'."""
    return StudyProgressed.of(study, n_trials).describe()


class StudyBoard:
    """Polls the study every `interval` seconds until `stop` is set; each finished trial and
    each change of the counts goes to `on_event` and to the terminal."""

    def __init__(
        self,
        study: optuna.Study,
        n_trials: int,
        stream: TextIO | None = None,
        interval: float = 2.0,
        live: bool | None = None,
        on_event: StudyListener | None = None,
    ) -> None:
        self.study, self.n_trials, self.interval = study, n_trials, interval
        self.on_event = on_event or (lambda event: None)
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.seen: set[int] = {
            t.number for t in study.get_trials(deepcopy=False) if t.state.is_finished()
        }
        self.last: StudyProgressed | None = None
        self._console: Any = None
        self._live: Any = None

    def poll(self) -> None:
        """Report newly finished trials and the counts (if they changed)."""
        for trial in self.study.get_trials(deepcopy=False):
            if trial.state.is_finished() and trial.number not in self.seen:
                self.seen.add(trial.number)
                finished = TrialFinished.of(trial)
                self.on_event(finished)
                self._print(finished.describe())
        progress = StudyProgressed.of(self.study, self.n_trials)
        if progress != self.last:
            self.last = progress
            self.on_event(progress)
            if self._live is not None:
                from rich.text import Text

                self._live.update(Text(progress.describe()))
            else:
                self._print(progress.describe())

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

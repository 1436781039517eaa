"""The one way this platform talks to a child process it starts for a side job (the tracking
process, the asynchronous evaluation process).

The child is `python -m <module>` running this process's code, in its own session (a terminal's
Ctrl-C reaches only the parent, which closes what the child holds), reading JSON lines on its
stdin and answering with JSON lines on its stdout. A reader thread hands each answer over and,
when the child is gone or answered garbage, says why once. Waiting for it to exit is bounded:
past the timeout it is killed. In the child, `answer_stream` keeps stdout for the answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

KILLED_WAIT = 5.0  # seconds to reap a child after SIGKILL


def same_code_env() -> dict[str, str]:
    """The environment for a child `python -m ppo_platform...`: this process's environment with
    the folders this process imported ppo_platform and trainers from first on PYTHONPATH, so the
    child runs the same code (a script may have set sys.path rather than PYTHONPATH)."""
    import importlib.util

    import ppo_platform

    roots = [str(Path(ppo_platform.__file__).resolve().parents[1])]
    found = importlib.util.find_spec("trainers")
    if found is not None and found.submodule_search_locations:
        roots.append(str(Path(next(iter(found.submodule_search_locations))).resolve().parent))
    inherited = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*roots, *([inherited] if inherited else [])]),
    }


def spawn_child(module: str) -> subprocess.Popen[str]:
    """`python -m module` running this process's code, talking JSON lines on its stdin and
    stdout, in its own session; the child finishes on end of input."""
    return subprocess.Popen(
        [sys.executable, "-m", module],
        env=same_code_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
        start_new_session=True,
    )


def exit_reason(who: str, pid: int, code: int) -> str:
    """'<who> (pid N) died (signal SIGKILL)' or '... (exit code 1)'."""
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    return f"{who} (pid {pid}) died ({how}); see its message above, if any"


class JsonLinesChild:
    """A child process and the JSON-lines pipe to it. `on_answer` gets each answer (in the
    reader thread); `on_end` gets, once, why the answers ended (its exit, or garbage)."""

    def __init__(
        self,
        module: str,
        who: str,
        on_answer: Callable[[dict[str, Any]], None],
        on_end: Callable[[str], None],
    ) -> None:
        self.who = who
        self.process = spawn_child(module)
        self._on_answer, self._on_end = on_answer, on_end
        self._send_lock = threading.Lock()
        threading.Thread(target=self._read, name=f"{module}-answers", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: dict[str, Any]) -> bool:
        """Write one JSON line; False if the child's input is closed (it is gone: the reader
        says why)."""
        assert self.process.stdin is not None
        with self._send_lock:
            try:
                self.process.stdin.write(json.dumps(message) + "\n")
                self.process.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                return False
        return True

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()

    def close(self, timeout: float) -> bool:
        """End its input and wait up to `timeout` seconds for it to exit, then kill it. True if
        it exited by itself."""
        with contextlib.suppress(OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            self.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(KILLED_WAIT)
            return False

    def _read(self) -> None:
        assert self.process.stdout is not None
        garbled: str | None = None
        try:
            for line in self.process.stdout:
                self._on_answer(json.loads(line))
        except (ValueError, KeyError, TypeError) as error:  # never a silent hang: a death
            garbled = f"{self.who} answered garbage ({type(error).__name__}: {error})"
            self.kill()
        code = self.process.wait()
        self._on_end(garbled or exit_reason(self.who, self.process.pid, code))


def answer_stream() -> IO[str]:
    """In the child: the stdout it was given, kept for its answers; anything printed afterwards
    (an env's or a library's notices) goes to stderr instead of corrupting them."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return answers

"""The one way this platform talks to a child process it starts for a side job (the tracking
process, the asynchronous evaluation process).

The child is `python -m <module>` running this process's code, in its own session (a terminal's
Ctrl-C reaches only the parent, which closes what the child holds), reading JSON lines on its
stdin and answering with JSON lines on its stdout. A reader thread hands each answer over and,
when the child is gone or answered garbage, says why once. Waiting for it to exit is bounded:
past the timeout it is killed. In the child, `answer_stream` keeps stdout for the answers.

`JsonLinesConnection` is the same conversation with a child another process started and shares
(a sweep's tracking process, which its warm workers use): over a Unix socket, same JSON lines.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

KILLED_WAIT = 5.0  # seconds to reap a child after SIGKILL
CONNECT_TIMEOUT = 60.0  # seconds a shared child may take to start listening


def same_code_env() -> dict[str, str]:
    """The environment for a child `python -m ppo_platform...`: this process's environment with
    the folder this process imported ppo_platform from (its trainers and api included) first on
    PYTHONPATH, so the child runs the same code (a script may have set sys.path rather than
    PYTHONPATH)."""
    import ppo_platform

    root = str(Path(ppo_platform.__file__).resolve().parents[1])
    inherited = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([root, *([inherited] if inherited else [])]),
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

    @property
    def pid(self) -> int:
        return self.process.pid

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


class JsonLinesConnection:
    """A connection to a child another process started and listens on the Unix socket
    `address`, with `JsonLinesChild`'s surface: `on_answer` gets each answer, `on_end` once
    why they ended. Closing or killing it ends this connection only: the child is not ours.
    Connecting waits (up to `CONNECT_TIMEOUT`) for the child to start listening."""

    def __init__(
        self,
        address: str,
        who: str,
        on_answer: Callable[[dict[str, Any]], None],
        on_end: Callable[[str], None],
    ) -> None:
        self.who = who
        self.socket = _connect(address)
        # The child's pid, from the kernel (SO_PEERCRED: pid, uid, gid), for messages.
        credentials = self.socket.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
        )
        self.pid = struct.unpack("3i", credentials)[0]
        self._answers = self.socket.makefile("r", encoding="utf-8")
        self._requests = self.socket.makefile("w", encoding="utf-8")
        self._on_answer, self._on_end = on_answer, on_end
        self._send_lock = threading.Lock()
        self._ended = threading.Event()
        self._reader = threading.Thread(target=self._read, name="connection-answers", daemon=True)
        self._reader.start()

    @property
    def alive(self) -> bool:
        return not self._ended.is_set()

    def send(self, message: dict[str, Any]) -> bool:
        """Write one JSON line; False if the connection is closed (the reader says why)."""
        with self._send_lock:
            try:
                self._requests.write(json.dumps(message) + "\n")
                self._requests.flush()
            except (OSError, ValueError):
                return False
        return True

    def kill(self) -> None:
        """Drop the connection: the child closes what this side had open there."""
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)

    def close(self, timeout: float) -> bool:
        """End this side's input and wait up to `timeout` seconds for the child to close the
        connection (having closed what this side left open). True if it did."""
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_WR)
        done = self._ended.wait(timeout)
        if not done:
            self.kill()
        return done

    def _read(self) -> None:
        reason = f"{self.who} (pid {self.pid}) closed the connection"
        try:
            for line in self._answers:
                self._on_answer(json.loads(line))
        except (ValueError, KeyError, TypeError) as error:
            reason = f"{self.who} answered garbage ({type(error).__name__}: {error})"
            self.kill()
        except OSError as error:
            reason = f"{self.who} (pid {self.pid}): connection lost ({error})"
        self._ended.set()
        self._on_end(reason)


def _connect(address: str) -> socket.socket:
    """A connection to `address`, retried while nothing listens there yet."""
    deadline = time.monotonic() + CONNECT_TIMEOUT
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(address)
            return sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def answer_stream() -> IO[str]:
    """In the child: the stdout it was given, kept for its answers; anything printed afterwards
    (an env's or a library's notices) goes to stderr instead of corrupting them."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return answers

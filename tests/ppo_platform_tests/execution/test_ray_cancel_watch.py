"""A Ray task gets one cancel twice (the executor's flag and `ray.cancel`, whose
`kill_main_task` calls `_thread.interrupt_main`): inside `CancelWatch` only the first raises,
so the second cannot cut short the close of the task's run. Ray is not needed: the interrupts
are delivered the way Ray delivers them."""

from __future__ import annotations

import _thread
import signal
import time

from ppo_platform.execution import signals
from ppo_platform.execution.ray_cancel import CancelWatch


def _let_the_handler_run() -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.01)  # Python calls a pending handler between bytecodes


def test_a_second_interrupt_while_the_task_closes_is_held_not_raised() -> None:
    mark = signals.received()
    before = signal.getsignal(signal.SIGINT)
    stages = []
    try:
        with CancelWatch(None) as watch:
            try:
                _thread.interrupt_main()  # Ray's cancel of the running task
                _let_the_handler_run()
                stages.append("trained on")
            except KeyboardInterrupt:
                stages.append("interrupted")
                _thread.interrupt_main()  # the flag's SIGINT, while the run closes
                time.sleep(0.2)
                stages.append("run closed")
    except KeyboardInterrupt:  # what leaves a run RUNNING: the close was cut short
        stages.append("close interrupted")
    finally:
        signals.forget_since(mark)
    assert stages == ["interrupted", "run closed"]
    assert watch.held == 1 and watch.interrupted.is_set()
    assert signal.getsignal(signal.SIGINT) is before  # the worker's own handler is back


def test_each_task_raises_its_own_first_interrupt() -> None:
    mark = signals.received()
    try:
        for _ in range(2):  # a reused worker: the next task's cancel raises again
            with CancelWatch(None) as watch:
                try:
                    _thread.interrupt_main()
                    _let_the_handler_run()
                except KeyboardInterrupt:
                    pass
            assert watch.interrupted.is_set() and watch.held == 0
    finally:
        signals.forget_since(mark)

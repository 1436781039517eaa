"""Imported first in the fork server that local pools fork their workers from (`local.py`).

The fork server runs in its caller's process group, so a signal to the whole group (Ctrl-C at
a terminal, `kill -TERM -PGID`, a closed terminal's SIGHUP) reaches it too. Killed, it would
take the pool's view of its workers with it: the pool reads each worker's exit through the
fork server, so every worker would look dead (the pool breaks) while they live on, orphaned.
It ignores those signals instead (Ctrl-C it ignores already) and ends, as it always does, once
its caller and every worker it forked are gone. A worker restores them as it starts
(`local.CallerState`), and dies with the fork server if that is killed anyway (`SIGKILL`, the
out-of-memory killer), so the pool's view holds either way.
"""

from __future__ import annotations

import signal

GROUP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

for _signum in GROUP_SIGNALS:
    signal.signal(_signum, signal.SIG_IGN)

"""The compiled PPO path: a whole PPO run (rollouts, GAE, K epochs of minibatch updates, the
diagnostics of every update) as one jit-compiled JAX program over JAX ports of the envs it
supports, vectorised over seeds (`jax.vmap`), so 16 seeds cost little more than one.

JAX is an optional extra (`pip install 'ppo-platform[compiled]'`); nothing here is imported by
the rest of trainers/. `export.py` copies the trained weights into a stable-baselines3 `PPO`
whose `predict` gives the same actions, so the saved agent loads and exports like any other.
"""

import os
import sys

# One XLA thread per process (as torch gets one: two busy cores only contend), unless the
# user's XLA_FLAGS say otherwise; it only takes effect before jax is first imported.
# ONE_XLA_THREAD: this package chose XLA's threading (threads.py sizes the CPU client's pool).
ONE_XLA_THREAD = "jax" not in sys.modules and "XLA_FLAGS" not in os.environ
if ONE_XLA_THREAD:
    os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

from ppo_platform.trainers.quiet_imports import import_keeping_numpy_rng  # noqa: E402

# jax draws from numpy's global random state at import; the modules here import it after this.
import_keeping_numpy_rng("jax")

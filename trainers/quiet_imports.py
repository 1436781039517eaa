"""Imports that leave numpy's global random state as they found it.

Importing jax draws from numpy's global generator (its Kubernetes cluster probe calls
`np.random.rand` at import), and EnvPool imports jax. stable-baselines3 seeds that generator
when a model is built and then draws minibatch permutations from it, so a first import after
seeding would make a process's first run train differently from every later one (the same seed,
other minibatches). Every import of jax or EnvPool in the platform goes through here.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


def import_keeping_numpy_rng(name: str) -> ModuleType:
    """`importlib.import_module(name)`, with numpy's global random state restored afterwards
    when the import ran (a module already imported draws nothing)."""
    if name in sys.modules:
        return sys.modules[name]
    import numpy as np  # here: `plan` and `validate` import envs/ and must not load numpy

    state = np.random.get_state()
    try:
        return importlib.import_module(name)
    finally:
        np.random.set_state(state)

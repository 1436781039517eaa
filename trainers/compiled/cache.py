"""XLA's persistent compilation cache for the compiled path: the programs of a configuration
are compiled once per machine, not once per process (compiling takes seconds, more than a
100k-step CartPole run trains for; a later process with the same shapes and hyperparameters
loads them). The caller names the folder (the platform's own home, never a user's path)."""

from __future__ import annotations

from pathlib import Path

import jax

# Programs that compile faster than this are not written (their load would not pay).
MIN_COMPILE_SECONDS = 0.5
# Disk bounded: past this the least recently used programs are deleted (one configuration's
# programs take about 0.5 MB).
MAX_CACHE_BYTES = 256 * 2**20


def use_compilation_cache(folder: Path) -> None:
    """Read and write compiled programs under `folder` from now on in this process."""
    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    jax.config.update("jax_compilation_cache_max_size", MAX_CACHE_BYTES)

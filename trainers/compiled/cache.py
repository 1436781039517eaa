"""XLA's persistent compilation cache for the compiled path: the programs of a configuration
are compiled once per machine, not once per process (compiling takes seconds, more than a
100k-step CartPole run trains for; a later process with the same shapes and hyperparameters
loads them). The caller names the folder (the platform's own home, never a user's path).

A cache entry is code the process runs, so a folder that someone else owns or may write to is
not used (as ssh treats its keys): the run compiles instead and says why on stderr.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import jax
from jax.experimental.compilation_cache import compilation_cache

# Programs that compile faster than this are not written (their load would not pay).
MIN_COMPILE_SECONDS = 0.5
# Disk bounded: past this the least recently used programs are deleted (one configuration's
# programs take about 0.5 MB).
MAX_CACHE_BYTES = 256 * 2**20

_in_use: list[Path] = []  # the folder this process reads and writes, once chosen


def unsafe_folder(folder: Path) -> str | None:
    """Why `folder` may not hold programs this process runs, or None when it may."""
    found = folder.lstat()
    if stat.S_ISLNK(found.st_mode) or not stat.S_ISDIR(found.st_mode):
        return f"{folder} is not a plain folder"
    if found.st_uid != os.getuid():
        return f"{folder} belongs to another user"
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{folder} is writable by others (chmod go-w {folder})"
    return None


def use_compilation_cache(folder: Path) -> bool:
    """Read and write compiled programs under `folder` from now on in this process; False
    (and why, on stderr) when the folder is not safe to run programs from."""
    if _in_use and _in_use[0] == folder:
        return True
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    problem = unsafe_folder(folder)
    if problem is not None:
        print(f"warning: compiled programs are not cached: {problem}", file=sys.stderr)
        if _in_use:  # nor in the folder chosen before
            jax.config.update("jax_compilation_cache_dir", None)
            compilation_cache.reset_cache()
            _in_use.clear()
        return False
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    jax.config.update("jax_compilation_cache_max_size", MAX_CACHE_BYTES)
    compilation_cache.reset_cache()  # another folder chosen earlier in this process is let go
    _in_use[:] = [folder]
    return True

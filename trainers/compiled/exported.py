"""The compiled path's programs kept traced (`jax.export`), so a later process skips tracing.

XLA's cache (cache.py) spares a process the compilation, not the tracing: turning the PPO
program's Python into StableHLO, about half a second of Python under the GIL before the first
update. `ExportStore.compiled(name, jitted, *shapes)` exports the program once and keeps its
serialised StableHLO in the store's folder; a later process with the same configuration,
batch size and code deserialises it (milliseconds) and compiles that, which XLA's cache then
answers. An entry is named by a digest of the program's name, its configuration and shapes,
this package's source files and the jax and jaxlib versions, so a change to any of them is a
new entry, never a stale program.

An entry is code the process runs, like XLA's: the folder must pass `cache.unsafe_folder`
(owned by this user, writable by nobody else, not a link), or nothing is kept and the program
is traced as before, saying why on stderr. Disk is bounded: past `MAX_ENTRIES` the least
recently used entries are deleted. An entry that does not deserialise is traced again and
replaced.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import jax
import jaxlib
from jax import export

from ppo_platform.trainers.compiled.cache import unsafe_folder

MAX_ENTRIES = 256  # one configuration's two programs take about 110 kB
_SUFFIX = ".jaxexport"


@functools.cache
def _code_digest() -> str:
    """This package's sources and the jax versions: what a program's StableHLO depends on."""
    digest = hashlib.sha256(f"{jax.__version__} {jaxlib.__version__}".encode())
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _shapes(tree: Any) -> str:
    leaves, structure = jax.tree_util.tree_flatten(tree)
    return f"{structure} {[(tuple(x.shape), str(x.dtype)) for x in leaves]}"


class ExportStore:
    """Exported programs under one safe folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def at(cls, folder: Path) -> ExportStore | None:
        """The store in `folder` (made if missing), or None (and why, on stderr) when the
        folder is not safe to run programs from."""
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        problem = unsafe_folder(folder)
        if problem is not None:
            print(f"warning: traced programs are not kept: {problem}", file=sys.stderr)
            return None
        return cls(folder)

    def compiled(self, name: str, jitted: Any, key: str, *shapes: Any) -> Any:
        """`jitted` compiled for `shapes` (ShapeDtypeStructs), from its kept export when there
        is one for `key` (the program's configuration), else exported and kept now."""
        label = f"{name}\0{key}\0{_shapes(shapes)}\0{_code_digest()}"
        path = self.folder / (hashlib.sha256(label.encode()).hexdigest() + _SUFFIX)
        exported = self._load(path)
        if exported is None:
            exported = export.export(jitted)(*shapes)
            self._keep(path, exported.serialize())
        return jax.jit(exported.call).lower(*shapes).compile()

    def _load(self, path: Path) -> Any:
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        try:
            exported = export.deserialize(bytearray(blob))
        except Exception:  # a truncated or foreign file: traced again and replaced
            return None
        os.utime(path)  # most recently used
        return exported

    def _keep(self, path: Path, blob: bytes | bytearray) -> None:
        """Written whole or not at all (another process may read it meanwhile)."""
        handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(blob)
            os.replace(temporary, path)
        except OSError as error:
            Path(temporary).unlink(missing_ok=True)
            print(f"warning: a traced program was not kept: {error}", file=sys.stderr)
            return
        self._prune()

    def _prune(self) -> None:
        entries = []
        for entry in self.folder.glob("*" + _SUFFIX):
            try:
                entries.append((entry.stat().st_mtime, entry))
            except OSError:  # deleted by another process meanwhile
                continue
        for _, entry in sorted(entries)[: max(0, len(entries) - MAX_ENTRIES)]:
            entry.unlink(missing_ok=True)

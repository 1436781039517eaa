"""Artifacts into a local artifact store as hard links: a model logged to MLflow takes no
second copy on disk when the store is on the same file system as the run folder."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse


def local_folder(artifact_uri: str) -> Path | None:
    """The folder of a `file:` (or plain path) artifact URI; None for remote stores."""
    parsed = urlparse(artifact_uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" and artifact_uri.startswith("/"):
        return Path(artifact_uri)
    return None


def link_artifact(artifact_uri: str, source: str | Path, folder: str | None) -> bool:
    """Hard-link `source` where MLflow's local store would copy it (`<uri>/<folder>/<name>`);
    False when the store is remote or a link cannot be made (then the caller copies)."""
    root = local_folder(artifact_uri)
    if root is None:
        return False
    source = Path(source)
    target = root / folder / source.name if folder else root / source.name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target.unlink()
        os.link(source, target)
    except OSError:  # another file system, or links not allowed: MLflow copies
        return False
    return True

"""Names from outside (run ids, study, experiment and spec names) and the paths built from them.

A name becomes a path only through `path_inside`: checked against its pattern first, then
resolved (symlinks and `..` followed) and required to stay inside its folder. Files the
platform writes for a user are not overwritten unless asked (`refuse_overwrite`).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable
from pathlib import Path

from ppo_platform.errors import BadInputError, ConflictError, SpecIssue, UnavailableError

SAFE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
SAFE_NAME_RULE = (
    "Letters, digits, '.', '_' and '-' (first character a letter or digit), "
    "at most 100 characters: it becomes a file and experiment name."
)
# Tag prefixes of MLflow and of the platform: a spec's tracking.tags may not set them (a forged
# ppo_platform.sweep_key would put a run into another sweep's report).
RESERVED_TAG_PREFIXES = ("mlflow.", "ppo_platform.")
# MLflow's rule for tag and param names (a spec's tags are logged as both: `tracking.tags.<name>`
# is a param, at most 250 characters, its value at most 6000).
TAG_NAME_PATTERN = r"^[A-Za-z0-9_/.\- :]+$"
TAG_NAME_MAX = 250 - len("tracking.tags.")
TAG_VALUE_MAX = 6000


def tag_name_ok(name: str) -> bool:
    """True if MLflow stores a run tag (and the param) named `name` as it is."""
    import posixpath

    if len(name) > TAG_NAME_MAX or not re.fullmatch(TAG_NAME_PATTERN, name):
        return False
    norm = posixpath.normpath(name)
    return norm == name and norm != "." and not norm.startswith(("..", "/"))


def tag_problem(tags: dict[str, str]) -> str | None:
    """Why MLflow (or the platform) would refuse a spec's `tracking.tags`, or None."""
    reserved = sorted(key for key in tags if key.lower().startswith(RESERVED_TAG_PREFIXES))
    if reserved:
        return (
            f"tag(s) {', '.join(reserved)} are reserved (mlflow.* and ppo_platform.* are "
            "set by MLflow and the platform); rename them"
        )
    refused = [key for key in tags if not tag_name_ok(key)]
    if refused:
        return (
            f"tag name(s) {', '.join(map(repr, refused))} would be refused by MLflow when the "
            f"run starts: names may only contain letters, digits, '_', '-', '.', ' ', ':' "
            f"and '/', at most {TAG_NAME_MAX} characters, and must not be a path that "
            "normalizes to another (no leading '/', no '..', '//' or './'); rename them"
        )
    long = [key for key, value in tags.items() if len(value) > TAG_VALUE_MAX]
    if long:
        return (
            f"tag value(s) of {', '.join(map(repr, long))} are longer than MLflow's "
            f"{TAG_VALUE_MAX} characters; shorten them"
        )
    return None


# MLflow run ids are uuid4 hex: 32 lowercase hex digits, nothing else.
RUN_ID_PATTERN = r"^[0-9a-f]{32}$"


def _bad(field: str, value: object, message: str, fix: str) -> BadInputError:
    return BadInputError([SpecIssue(field, message, value, fix=fix)], field)


def check_run_id(run_id: str, field: str = "--resume") -> str:
    """`run_id` if it is an MLflow run id; BadInputError before it touches the file system."""
    if not isinstance(run_id, str) or not re.fullmatch(RUN_ID_PATTERN, run_id):
        raise _bad(
            field,
            run_id,
            "is not an MLflow run id (32 lowercase hex digits).",
            "copy the run id from the MLflow UI or from the line `run <id>` that "
            "`ppo-platform run` printed.",
        )
    return run_id


def check_name(name: str, field: str) -> str:
    """`name` if it is a safe name (same rule as a spec's name), else BadInputError."""
    if not isinstance(name, str) or not re.fullmatch(SAFE_NAME_PATTERN, name):
        raise _bad(field, name, "is not a safe name.", f"use a plain name. {SAFE_NAME_RULE}")
    return name


def path_inside(root: Path, parts: Iterable[str], field: str) -> Path:
    """root/parts resolved, refused unless it stays inside root (after `..` and symlinks)."""
    base = root.resolve()
    path = base.joinpath(*parts).resolve()
    if path != base and not path.is_relative_to(base):
        raise _bad(
            field,
            "/".join(parts),
            f"leads outside its folder {base}.",
            "use a plain name: no '/', '..' or absolute paths.",
        )
    return path


def is_inside(root: Path, path: Path) -> bool:
    """True if `path` (resolved, symlinks followed) lies inside `root`."""
    return path.resolve().is_relative_to(root.resolve())


def refuse_overwrite(paths: Iterable[Path], field: str, force: bool) -> None:
    """ConflictError naming the existing files among `paths`, unless `force`."""
    existing = [path for path in paths if path.exists() or path.is_symlink()]
    if existing and not force:
        names = ", ".join(path.name for path in existing)
        issue = SpecIssue(
            field,
            f"{names} exist(s) already in this folder; refusing to overwrite.",
            str(existing[0].parent),
            fix="pass --force to overwrite, or choose another folder.",
        )
        raise ConflictError([issue], field)


def refuse_unknown_host(url: str, field: str, fix: str) -> None:
    """Resolve the database URL's host before connecting: a name that does not exist is bad
    input naming `field`; a resolver that cannot answer now (EAI_AGAIN) is UnavailableError,
    and so is a host that resolves but does not answer (found later, when connecting)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return  # the caller's own parse reports a URL that is no URL
    if not parsed.host:
        return  # sqlite files, unix sockets: nothing to resolve
    try:
        socket.getaddrinfo(parsed.host, parsed.port)
    except socket.gaierror as exc:
        shown = parsed.render_as_string(hide_password=True)
        if exc.errno == socket.EAI_AGAIN:
            raise UnavailableError(
                f"{field} {shown}: the name {parsed.host!r} cannot be resolved now "
                f"({exc.strerror}). Fix: retry, or check the DNS of this machine."
            ) from None
        issue = SpecIssue(
            field, f"names host {parsed.host!r}, which does not exist.", shown, fix=fix
        )
        raise BadInputError([issue]) from None

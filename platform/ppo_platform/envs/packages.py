"""Env packages: modules the operator names whose import registers environments (and wrappers).

A spec never names code (`module:Id` stays refused). The operator does, with
`PPO_PLATFORM_ENV_PACKAGES` or the CLI's `--env-package`; every process that builds or checks
an env calls `import_env_packages` before it reads gymnasium's registry. Child processes inherit
the setting through their environment; an env factory also carries the names it was built with.
Packages that register on import and are commonly installed (ale_py) are imported when present.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Iterable

from ppo_platform.errors import BadInputError, SpecIssue
from ppo_platform.settings import get_settings, module_name_problem

ENV_PACKAGES_SETTING = "PPO_PLATFORM_ENV_PACKAGES"
# Imported whenever installed: they register their environments on import.
AUTOMATIC_PACKAGES = ("ale_py",)

_imported: list[str] = []
_lock = threading.Lock()


def _import(name: str, field: str) -> None:
    try:
        importlib.import_module(name)
    except Exception as error:  # ImportError, or the package's own failure on import
        raise BadInputError(
            [
                SpecIssue(
                    field,
                    f"env package {name} cannot be imported: {type(error).__name__}: {error}",
                    name,
                    fix="install it, or put the folder that holds it on PYTHONPATH, in every "
                    "process that trains (workers and Ray nodes too); or remove it from "
                    f"{ENV_PACKAGES_SETTING} / --env-package.",
                )
            ]
        ) from error


def import_env_packages(names: Iterable[str] | None = None) -> tuple[str, ...]:
    """Import the automatic packages that are installed and `names` (default: the setting), once
    per process each; returns every env package imported in this process so far."""
    if names is None:
        names = get_settings().env_packages
    wanted = [n for n in AUTOMATIC_PACKAGES if importlib.util.find_spec(n) is not None]
    wanted += [n for n in names if n not in wanted]
    with _lock:
        for name in wanted:
            if name not in _imported:
                problem = module_name_problem(name)
                if problem:
                    raise BadInputError([SpecIssue(ENV_PACKAGES_SETTING, problem, name)])
                _import(name, ENV_PACKAGES_SETTING)
                _imported.append(name)
        return tuple(_imported)


def imported_env_packages() -> tuple[str, ...]:
    """The env packages this process has imported (the automatic ones included)."""
    return tuple(_imported)

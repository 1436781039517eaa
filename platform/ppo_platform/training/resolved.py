"""What a run resolved when it started, recorded with it (docs/guides/spec.md, "What a run
records"): the vectorization `auto` chose and why, the env packages it imported (with their
versions), the versions of the libraries that train, the device and the torch threads.

Kept as MLflow tags (`ppo_platform.resolved.<key>`), as `resolved.json` in the run folder (and
logged beside the run's other artifacts), said on the console at the start, and stored with a
REST job (`status`, the dashboard)."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

from ppo_platform.envs.packages import imported_env_packages
from ppo_platform.spec import envpool_support
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.vectorization import native_obstacle, resolve

RESOLVED_FILE = "resolved.json"
TAG_PREFIX = "ppo_platform.resolved."
# The distributions whose versions decide what a run computes (missing ones: "not installed").
LIBRARIES = (
    "stable-baselines3",
    "gymnasium",
    "torch",
    "numpy",
    "ale-py",
    "mujoco",
    "envpool",
    "transformers",
)


def version_of(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def package_version(module: str) -> str:
    """`module`'s distribution version, or where it was imported from (a plain module)."""
    top = module.split(".")[0]
    names = metadata.packages_distributions().get(top, [])
    if names:
        return version_of(names[0])
    return "local module (no installed distribution)"


def vectorization_reason(spec: ExperimentSpec, own_env: bool) -> str:
    """Why the run's envs are vectorized the way they are."""
    chosen = resolve(spec, own_env)
    if spec.env.vectorization != "auto":
        return "set in the spec"
    if own_env:
        return "auto: your own env (make_env) runs per env"
    if chosen == "native":
        return f"auto: {spec.env.id} has a native vector env"
    native = native_obstacle(spec)
    if chosen == "envpool":
        return f"auto: EnvPool runs {spec.env.id} ({native})"
    envpool = envpool_support.obstacle(spec) or "auto picks it for ALE games and MuJoCo only"
    return f"auto: no native vector env ({native}); not EnvPool ({envpool})"


def resolved_setup(spec: ExperimentSpec, model: Any, own_env: bool = False) -> dict[str, str]:
    """The run's resolved setup as flat text fields."""
    import torch

    packages = imported_env_packages()
    resolved = {
        "vectorization": resolve(spec, own_env),
        "vectorization_reason": vectorization_reason(spec, own_env),
        "env_packages": ", ".join(f"{p} {package_version(p)}" for p in packages) or "none",
        "device": str(model.device),
        "torch_threads": str(torch.get_num_threads()),
    }
    resolved.update({f"version.{name}": version_of(name) for name in LIBRARIES})
    return resolved


def record_resolved(tracker: Any, resolved: dict[str, str]) -> Path:
    """Tags on the run, `resolved.json` in its folder (logged as an artifact too)."""
    tracker.set_tags({f"{TAG_PREFIX}{key}": value for key, value in resolved.items()})
    path = Path(tracker.run_dir) / RESOLVED_FILE
    path.write_text(json.dumps(resolved, indent=2, sort_keys=True) + "\n")
    tracker.log_artifact(path)
    return path

"""On-disk cache of what `inspect_env` read from gymnasium's own environments.

Importing gymnasium (and numpy) costs ~0.25 s, half of `plan`'s 0.5 s budget; a repeated plan
for a built-in env reads its spaces from here instead. Only envs whose entry point lives in
gymnasium itself are cached, keyed by gymnasium's version, so a user-registered env (which can
change between processes) is always inspected afresh. An entry is written only after the env
passed the shared env check (`spec.env_ids.usable_env`), so a cache hit carries its verdict;
`CACHE_FORMAT` in the key retires entries written before that check ran (e.g. Blackjack-v1)
or before the reward probe (format 3).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ppo_platform.planner.env_model import EnvInfo
from ppo_platform.settings import Settings, get_settings

CACHEABLE_ENTRY_POINT = "gymnasium.envs."
CACHE_FORMAT = 3  # bump when an entry's meaning changes; older entries are then not read


def _cache_file(settings: Settings | None) -> Path:
    return (settings or get_settings()).home / "cache" / "gymnasium_envs.json"


def _key(env_id: str) -> str | None:
    try:
        return f"{env_id}@gymnasium=={version('gymnasium')}#format{CACHE_FORMAT}"
    except PackageNotFoundError:
        return None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}  # missing or damaged: inspect afresh
    return data if isinstance(data, dict) else {}


def cached_env_info(env_id: str, settings: Settings | None = None) -> Any | None:
    """The EnvInfo stored for `env_id` under this gymnasium version, or None."""
    key = _key(env_id)
    entry = _read(_cache_file(settings)).get(key) if key else None
    if not isinstance(entry, dict):
        return None
    try:
        entry["observation_shape"] = tuple(entry["observation_shape"])
        entry["action_shape"] = tuple(entry["action_shape"])
        return EnvInfo(**entry)
    except (KeyError, TypeError):
        return None


def remember_env_info(info: Any, settings: Settings | None = None) -> None:
    """Store `info` if it describes one of gymnasium's own environments (atomic write)."""
    key = _key(info.env_id)
    if key is None or not info.entry_point.startswith(CACHEABLE_ENTRY_POINT):
        return
    path = _cache_file(settings)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _read(path)
        data[key] = asdict(info)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, indent=1, sort_keys=True))
        temporary.replace(path)
    except OSError:
        pass  # a read-only home only costs speed

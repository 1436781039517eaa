"""`ppo-platform import-zoo HYPERPARAMS.yml ENV_ID`: an rl-baselines3-zoo PPO entry as a spec.

The file is read with PyYAML's safe loader (anchors and `<<` merge keys are followed, `!!float`
is read; no object is constructed), the env's entry is converted key by key
(`zoo_fields.convert_entry`), and the result goes through the same schema, refusal rules and env
check as `validate`. The spec records where it came from in two tracking tags.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ppo_platform.errors import BadInputError, SpecError, SpecIssue
from ppo_platform.interop.zoo_entries import ale_frame_skip, entry_for, missing_extra
from ppo_platform.interop.zoo_fields import convert_entry
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import dump_spec, read_spec_text, validate_data
from ppo_platform.spec.names import refuse_overwrite
from ppo_platform.tracking import tags as tag

SOURCE_NAME = "rl-baselines3-zoo"


@dataclass(frozen=True)
class ZooImport:
    """The imported spec and where it came from."""

    spec: ExperimentSpec
    file_name: str
    env_id: str
    notes: tuple[str, ...] = ()  # conversions a reader should know about

    @property
    def command(self) -> str:
        return f"ppo-platform import-zoo {self.file_name} {self.env_id}"

    def spec_yaml(self) -> str:
        header = (
            f"# Imported by `{self.command}` from {SOURCE_NAME} hyperparameters.\n"
            "# Keys the entry does not set keep stable-baselines3's defaults, as in the zoo.\n"
        )
        notes = "".join(f"# Note: {note}\n" for note in self.notes)
        return header + notes + dump_spec(self.spec)


def _source(path: Path, env_id: str) -> str:
    return f"{path.name}[{env_id}]"


def read_zoo_file(path: str | Path) -> dict[str, Any]:
    """The zoo file as a mapping of entries; SpecError if it cannot be read or is no mapping."""
    path = Path(path)
    text = read_spec_text(path, "hyperparameter file", "hyperparams/ppo.yml")
    try:
        document = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        issue = SpecIssue(
            "", f"YAML error: {exc.problem}.", None, line, column, "fix the YAML at this position."
        )
        raise SpecError([issue], str(path)) from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise SpecError([SpecIssue("", f"YAML error: {exc}.")], str(path)) from None
    if not isinstance(document, dict):
        raise SpecError(
            [
                SpecIssue(
                    "",
                    "is not a mapping of env ids to hyperparameters.",
                    type(document).__name__,
                    fix="give a zoo hyperparameter file such as hyperparams/ppo.yml.",
                )
            ],
            str(path),
        )
    return document


def _entry(document: dict[str, Any], env_id: str, path: Path) -> dict[str, Any]:
    entry = document.get(env_id)
    if entry is None:
        names = [str(key) for key in document]
        close = difflib.get_close_matches(env_id, names, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"it has {len(names)} entries."
        raise SpecError(
            [SpecIssue("env_id", f"has no entry in {path.name}; {hint}", env_id)], str(path)
        )
    if not isinstance(entry, dict) or not all(isinstance(key, str) for key in entry):
        raise SpecError(
            [
                SpecIssue(
                    env_id,
                    "is not a mapping of hyperparameter names to values.",
                    type(entry).__name__,
                    fix="write the entry as key: value lines.",
                )
            ],
            str(path),
        )
    return entry


def spec_name(env_id: str) -> str:
    """A safe spec name for the env: `Pendulum-v1` -> `pendulum-v1-zoo`."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", env_id.lower()).strip("-._") or "env"
    return f"{slug[:90]}-zoo"


def import_zoo(path: str | Path, env_id: str, check_env: bool = True) -> ZooImport:
    """The env's PPO entry of a zoo hyperparameter file as a validated spec.

    SpecError naming every key that cannot be expressed, or the schema errors and refusals
    `validate` reports for the converted spec (`check_env`: also the env check).
    """
    path = Path(path)
    source = _source(path, env_id)
    document = read_zoo_file(path)
    entry_name, found = entry_for(document, env_id)
    entry = _entry(document, entry_name, path)
    data, issues = convert_entry(entry)
    if issues:
        raise SpecError(issues, f"{path.name}[{entry_name}]")
    notes = (*found, *_effective_minibatch(data), *ale_frame_skip(data, env_id))
    data["name"] = spec_name(env_id)
    data.setdefault("env", {})["id"] = env_id
    data["tracking"] = {
        "tags": {tag.IMPORTED_FROM: f"{SOURCE_NAME} {path.name}", tag.IMPORTED_ENTRY: env_id}
    }
    spec = validate_data(data, None, source)
    missing = missing_extra(env_id)
    if missing:  # pure data: converted all the same, and said why it cannot train here
        notes += (missing,)
    elif check_env:
        from ppo_platform.envs.ids import check_spec_env

        check_spec_env(spec, source)
    return ZooImport(spec, path.name, env_id, notes)


def _effective_minibatch(data: dict[str, Any]) -> tuple[str, ...]:
    """A batch_size above the rollout: SB3 then steps on the whole rollout; say so and do so."""
    n_envs = data.get("env", {}).get("n_envs", 1)  # SB3's and the zoo's defaults
    n_steps = data.get("rollout", {}).get("n_steps", 2048)
    minibatch = data.get("update", {}).get("minibatch_size", 64)
    if not all(isinstance(v, int) for v in (n_envs, n_steps, minibatch)):
        return ()  # the schema names the bad value
    rollout = n_envs * n_steps
    if minibatch <= rollout:
        return ()
    data["update"]["minibatch_size"] = rollout
    return (
        f"batch_size {minibatch} is larger than the rollout (n_envs x n_steps = {n_envs} x "
        f"{n_steps} = {rollout}); stable-baselines3 then steps on the whole rollout, so the "
        f"spec's update.minibatch_size is {rollout}.",
    )


def write_import(result: ZooImport, out: str | Path, force: bool = False) -> Path:
    """Write the imported spec to `out`; ConflictError if it exists and `force` is off."""
    target = Path(out)
    refuse_overwrite([target], "--out", force)
    try:
        target.write_text(result.spec_yaml(), encoding="utf-8")
    except OSError as exc:
        raise BadInputError(
            [
                SpecIssue(
                    "--out",
                    f"cannot write the spec: {exc.strerror}.",
                    str(target),
                    fix="pass a writable file path with --out.",
                )
            ],
            "--out",
        ) from None
    return target

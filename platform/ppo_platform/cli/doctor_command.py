"""`ppo-platform doctor RUN_ID|PATH`: the likely root causes of a run's trouble, most likely
first, with their evidence and the spec patch that fixes each (docs/guides/diagnostics.md).

Registered on the main Typer app by cli/app.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ppo_platform.cli.output import bad_option, fail
from ppo_platform.errors import PlatformError

if TYPE_CHECKING:
    from ppo_platform.doctor import Diagnosis
    from ppo_platform.spec.workloads import AnySpec

Target = Annotated[
    str,
    typer.Argument(
        help="An MLflow run id this platform trained, or a TensorBoard log folder written by "
        "stable-baselines3 or CleanRL.",
        show_default=False,
    ),
]
AsJson = Annotated[
    bool, typer.Option("--json", help='Print {"causes": [...], "not_judged": [...]} as JSON.')
]
WriteTo = Annotated[
    Path | None,
    typer.Option(
        "--write", help="Write the run's spec with the top cause's patch applied (validated)."
    ),
]


def _describe(diagnosis: Diagnosis, what: str) -> list[str]:
    lines = [f"{what}: {len(diagnosis.causes)} likely cause(s), most likely first"]
    for rank, finding in enumerate(diagnosis.causes, 1):
        lines.append(f"{rank}. {finding.line()}")
        for item in finding.evidence:
            where = f" from step {item['from_step']:,}" if "from_step" in item else ""
            limit = f" (threshold {item['threshold']})" if item.get("threshold") is not None else ""
            note = f": {item['note']}" if "note" in item else ""
            lines.append(f"     {item['metric']} = {item['value']}{limit}{where}{note}")
    thin = diagnosis.thin_evidence
    if thin is not None:  # too short to tell a trend: one line, not one per cause
        lines.append(f"not judged{' (trends)' if diagnosis.causes else ''}: {thin}")
    elif not diagnosis.causes:
        lines.append("no cause found: healthy on every signal judged")
    lines += [
        f"not judged: {n.cause}: {n.reason}" for n in diagnosis.not_judged if n.reason != thin
    ]
    return lines


def _write_patched(diagnosis: Diagnosis, spec: AnySpec | None, target: str, out: Path) -> Path:
    from ppo_platform.doctor import patched_spec
    from ppo_platform.spec.loader import dump_spec

    top = diagnosis.top
    if spec is None:
        bad_option("--write", str(out), f"{target} has no spec to patch.", _WRITE_FIX)
    if top is None or not top.patch:
        reason = "no cause was found" if top is None else f"{top.cause} has no spec patch"
        bad_option("--write", str(out), f"nothing to write: {reason}.", _WRITE_FIX)
    out.write_text(dump_spec(patched_spec(spec, top)), encoding="utf-8")
    return out


_TARGET_FIX = "give a run id `ppo-platform run` printed, or a TensorBoard log folder."
_WRITE_FIX = (
    "--write needs a run this platform trained whose top cause carries a patch; follow the "
    "printed advice otherwise."
)


def doctor(target: Target, as_json: AsJson = False, write: WriteTo = None) -> None:
    """Diagnose a run: likely root causes, their evidence, and the spec patch (exit 2: bad id)."""
    from ppo_platform.doctor.tensorboard import diagnose_log_folder
    from ppo_platform.training.diagnosis import diagnose_stored_run

    spec: AnySpec | None = None
    try:
        if not Path(target).is_dir() and ("/" in target or target.startswith(".")):
            bad_option("TARGET", target, "is no folder (and no run id).", _TARGET_FIX)
        if Path(target).is_dir():
            diagnosis, source = diagnose_log_folder(Path(target))
            what = f"{target} ({source} TensorBoard log)"
        else:
            diagnosis, spec = diagnose_stored_run(target)
            what = f"run {target}"
        written = _write_patched(diagnosis, spec, target, write) if write else None
    except PlatformError as error:
        fail(error)
    if as_json:
        typer.echo(json.dumps(diagnosis.to_dict(), indent=2))
    else:
        typer.echo("\n".join(_describe(diagnosis, what)))
    if written is not None:
        typer.echo(f"wrote {written} (next: ppo-platform run {written})", err=as_json)


def register(app: typer.Typer) -> None:
    app.command()(doctor)

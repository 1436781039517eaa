"""The results file: `benchmarks/results/<stem>.json` and `.md`, one current result each."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness.machine import ROOT, machine_line, uptime

RESULTS = ROOT / "benchmarks" / "results"


def command_line(module: str) -> str:
    """How this benchmark was started, to print beside its result (`python -m MODULE ARGS`)."""
    return shlex.join(["python", "-m", module, *sys.argv[1:]])


def header(title: str, report: dict[str, Any]) -> list[str]:
    """Title, command, machine and versions: the first lines of a result."""
    lines = [f"# {title}", "", f"Command: `{report['command']}`", ""]
    if "machine" in report:
        lines.append(machine_line(report["machine"]))
    if report.get("versions"):
        lines.append(f"Versions: {', '.join(f'{k} {v}' for k, v in report['versions'].items())}.")
    return lines


def write_results(
    report: dict[str, Any],
    stem: str,
    render: Callable[[dict[str, Any]], str] | None = None,
    folder: Path = RESULTS,
    markdown_file: bool = True,
    echo: bool = True,
) -> Path:
    """Adds `uptime_after`, writes `<folder>/<stem>.json` and, with `render`, prints the markdown
    and writes it to `.md` (unless `markdown_file` is false: a page edited by hand). Without
    `render` the JSON is printed; `echo=False` prints nothing. Returns the JSON's path."""
    report["uptime_after"] = uptime()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.json"
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    if render is None:
        if echo:
            print(json.dumps(report, indent=2, default=str))
        return path
    text = render(report)
    if markdown_file:
        (folder / f"{stem}.md").write_text(text)
    if echo:
        print(text)
    return path


def command_entry(report: dict[str, Any]) -> dict[str, str]:
    """The command that made a result, with its date and commit."""
    m = report["machine"]
    return {"command": report["command"], "date_utc": m["date_utc"], "commit": m["git_commit"]}


def merge_previous(
    report: dict[str, Any],
    previous_file: Path,
    redone: Iterable[tuple[Any, ...]],
    key: Sequence[str],
    lists: Sequence[str] = (),
    mappings: Sequence[str] = (),
) -> dict[str, Any]:
    """`report` extended by the rows (`runs`) of the result in `previous_file` that it re-runs
    none of (`redone`: the re-run rows' values of the fields `key`), for a command that re-runs
    a subset of a table. The `lists` fields become the union (the previous order first), the
    `mappings` fields are merged (the report's entries win), and `commands` lists every command
    whose rows the result holds. Without a previous file, `report` as it is."""
    if not previous_file.exists():
        return report
    previous = json.loads(previous_file.read_text())
    again = set(redone)
    kept = [row for row in previous["runs"] if tuple(row[f] for f in key) not in again]
    merged = {**report, "runs": kept}
    for name in lists:
        merged[name] = previous[name] + [x for x in report[name] if x not in previous[name]]
    for name in mappings:
        merged[name] = {**previous.get(name, {}), **report[name]}
    old_commands = previous.get("commands") or [command_entry(previous)]
    merged["commands"] = [*old_commands, command_entry(report)]
    return merged

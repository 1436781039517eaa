"""The results file: `benchmarks/results/<stem>.json` and `.md`, one current result each."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
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

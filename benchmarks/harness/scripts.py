"""Every benchmark script, and a check that each one imports and answers `--help`.

python -m benchmarks.harness.scripts          # exit 1 and the failures if any script fails
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys

from benchmarks.harness.machine import ROOT

GROUPS = ("overhead", "throughput", "parallel", "learning", "service")


def scripts() -> list[str]:
    """The module name of every script (a module with a `__main__` block) in the groups."""
    found = []
    for group in GROUPS:
        for path in sorted((ROOT / "benchmarks" / group).glob("*.py")):
            if path.name != "__init__.py" and '__name__ == "__main__"' in path.read_text():
                found.append(f"benchmarks.{group}.{path.stem}")
    return found


def help_failure(module: str) -> str | None:
    """None when `python -m MODULE --help` prints its usage and exits 0, else what went wrong."""
    out = io.StringIO()
    argv = sys.argv
    sys.argv = [module, "--help"]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            return f"exited {exit_.code}: {out.getvalue()[-1000:]}"
    except Exception as error:  # any import or argument-parser error is the finding
        return f"{type(error).__name__}: {error}"
    finally:
        sys.argv = argv
    return None if "usage:" in out.getvalue() else f"no usage printed: {out.getvalue()[-500:]}"


def main() -> None:
    failures = {module: help_failure(module) for module in scripts()}
    print(
        json.dumps({"checked": list(failures), "failed": {k: v for k, v in failures.items() if v}})
    )
    sys.exit(1 if any(failures.values()) else 0)


if __name__ == "__main__":
    main()

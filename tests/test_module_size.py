"""Size guard: modules stay under 400 lines and functions under 60, unless allowlisted here."""

from __future__ import annotations

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CHECKED_FOLDERS = ("platform/ppo_platform", "trainers")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60

# "path" for a module, "path::Qualified.name" for a function -> one-line reason.
ALLOWED_OVERSIZE: dict[str, str] = {}


def function_lengths(tree: ast.AST, prefix: str = "") -> dict[str, int]:
    """Qualified name -> length in lines of every function and method under `tree`."""
    lengths: dict[str, int] = {}
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                lengths[name] = node.end_lineno - node.lineno + 1
            lengths.update(function_lengths(node, prefix=f"{name}."))
        else:
            lengths.update(function_lengths(node, prefix=prefix))
    return lengths


def oversized() -> dict[str, int]:
    """Every module and function over its limit, keyed like ALLOWED_OVERSIZE, with its length."""
    found: dict[str, int] = {}
    for folder in CHECKED_FOLDERS:
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            relative = path.relative_to(REPO_ROOT).as_posix()
            module_lines = len(source.splitlines())
            if module_lines > MAX_MODULE_LINES:
                found[relative] = module_lines
            for name, lines in function_lengths(ast.parse(source, filename=relative)).items():
                if lines > MAX_FUNCTION_LINES:
                    found[f"{relative}::{name}"] = lines
    return found


def test_no_module_or_function_is_oversized_unless_allowlisted():
    unexpected = {name: n for name, n in oversized().items() if name not in ALLOWED_OVERSIZE}
    assert unexpected == {}, (
        f"split these (modules <= {MAX_MODULE_LINES} lines, "
        f"functions <= {MAX_FUNCTION_LINES} lines): {unexpected}"
    )


def test_the_allowlist_names_only_current_offenders():
    stale = sorted(set(ALLOWED_OVERSIZE) - set(oversized()))
    assert stale == [], f"no longer oversized, remove from ALLOWED_OVERSIZE: {stale}"


def test_function_lengths_count_methods_by_qualified_name():
    tree = ast.parse(
        "class A:\n    def f(self):\n        x = 1\n        return x\n\ndef g():\n    pass\n"
    )
    assert function_lengths(tree) == {"A.f": 3, "g": 2}

"""One name per thing: no class name is defined in two modules of ppo_platform, trainers and
api (a REST body is `XPublic`, the FastAPI convention, beside the `X` that makes it); and the
code cites this repository's docs pages, not documents it does not hold."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("platform/ppo_platform", "trainers", "api")


def class_definitions(folders: tuple[str, ...], root: Path = REPO_ROOT) -> dict[str, list[str]]:
    """Class name -> the modules (paths) that define a class of that name."""
    found: dict[str, list[str]] = defaultdict(list)
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    module = path.relative_to(root).as_posix()
                    if module not in found[node.name]:
                        found[node.name].append(module)
    return found


def test_no_class_name_is_defined_in_two_modules() -> None:
    twice = {name: where for name, where in class_definitions(PACKAGES).items() if len(where) > 1}
    assert twice == {}


def test_the_check_sees_a_name_defined_twice(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.py").write_text("class RunResult:\n    pass\n")
    (tmp_path / "a" / "two.py").write_text("def f():\n    class RunResult:\n        pass\n")
    assert class_definitions(("a",), tmp_path)["RunResult"] == ["a/one.py", "a/two.py"]


# The lessons' "seed" documents and a design file this repository does not hold.
OUTSIDE_DOCUMENT = re.compile(r"seed[ -]00\d|DESIGN\.md", re.IGNORECASE)


def test_no_source_cites_a_document_outside_the_repository() -> None:
    cited = []
    for folder in (*PACKAGES, "specs", "tests"):
        for path in sorted((REPO_ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".yaml", ".yml") or path == Path(__file__):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if OUTSIDE_DOCUMENT.search(line):
                    cited.append(f"{path.relative_to(REPO_ROOT)}:{number}")
    assert cited == []

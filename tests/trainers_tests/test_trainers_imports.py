"""trainers' own imports: no module imports a private torch or SB3 name at module level (a
release that renames one must not break `import ppo_platform.trainers.ppo`), and no import cycle,
counting
imports inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

TRAINERS = Path(__file__).resolve().parents[2] / "trainers"


def module_name(path: Path, root: Path = TRAINERS) -> str:
    """The installed name: the folder `root` is the package `ppo_platform.trainers`."""
    parts = ("ppo_platform", "trainers", *path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, node: ast.ImportFrom | ast.Import, root: Path = TRAINERS) -> list[str]:
    """Absolute names of the modules (or module.attribute) that `node` imports."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module_name(path, root).split(".")
        if path.name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, base] if base else package)
    return [f"{base}.{alias.name}" for alias in node.names]


def private(name: str) -> bool:
    return any(part.startswith("_") and part != "__future__" for part in name.split("."))


def test_no_module_imports_a_private_name_at_module_level() -> None:
    found = []
    for path in sorted(TRAINERS.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [name for name in imported(path, node) if private(name)]
                found += [f"{path.relative_to(TRAINERS.parent)}: {name}" for name in names]
    assert found == []


def import_cycles(root: Path) -> list[str]:
    """`a -> b` for each import of the package `root` that lies on an import cycle."""
    modules = {module_name(path, root): path for path in root.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in imported(path, node, root):
                    # `from .fast import switch` names a module; `from .ppo import X` its module
                    module = target if target in modules else target.rpartition(".")[0]
                    if module in modules and module != name:
                        edges[name].add(module)
    return sorted(f"{a} -> {b}" for a in edges for b in edges[a] if a in _reachable(edges, b))


def test_trainers_has_no_import_cycle() -> None:
    assert import_cycles(TRAINERS) == []
    # not vacuous: the scan sees the trainers' imports of each other under their installed names
    ppo = TRAINERS / "ppo.py"
    names = [n for node in ast.walk(ast.parse(ppo.read_text())) if isinstance(node, ast.ImportFrom)
             for n in imported(ppo, node)]  # fmt: skip
    assert "ppo_platform.trainers.losses" in {n.rpartition(".")[0] for n in names}
    assert module_name(ppo) == "ppo_platform.trainers.ppo"


def _reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in edges[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_cycle_check_sees_a_function_level_import(tmp_path: Path) -> None:
    """The old `ppo` <-> `rollout` pair: `rollout` imported `ppo` inside a method."""
    package = tmp_path / "trainers"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ppo.py").write_text("from .rollout import LeanRolloutMixin\n")
    (package / "rollout.py").write_text("def f():\n    from .ppo import x\n")
    assert import_cycles(package) == [
        "ppo_platform.trainers.ppo -> ppo_platform.trainers.rollout",
        "ppo_platform.trainers.rollout -> ppo_platform.trainers.ppo",
    ]

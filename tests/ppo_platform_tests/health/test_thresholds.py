"""Every health threshold is defined once (`ppo_platform.health.thresholds`): the live monitor,
the spec's `diagnostics:` defaults and the doctor read the same values, and the docs quote them."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

from ppo_platform.health.thresholds import DEFAULTS, LIMITS, Limits, Thresholds
from ppo_platform.spec.diagnostics import DiagnosticsSpec

ROOT = Path(__file__).resolve().parents[3]
HOME = ROOT / "platform" / "ppo_platform" / "health" / "thresholds.py"
SOURCES = [ROOT / "platform" / "ppo_platform", ROOT / "trainers", ROOT / "api"]
SHARED = {f.name for f in fields(Thresholds)} & {f.name for f in fields(Limits)}
NAMES = {f.name for f in fields(Thresholds)} | {
    "annealed_fraction",
    "min_clip_range_checked",
    *SHARED,
}


def _numeric(node: ast.expr | None) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _default_of(value: ast.expr | None) -> ast.expr | None:
    """The default a class field or module constant is given (a pydantic `Field(x, ...)` too)."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "Field":
        if value.args:
            return value.args[0]
        return next((k.value for k in value.keywords if k.arg == "default"), None)
    return value


def threshold_definitions(source: str, path: str) -> list[str]:
    """`path:line name` of every threshold name given a number as its default or value."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets, value = [node.target.id], node.value
        elif isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            value = node.value
        else:
            continue
        for name in targets:
            if name.lower() in NAMES and _numeric(_default_of(value)):
                found.append(f"{path}:{node.lineno} {name}")
    return sorted(found, key=lambda hit: int(hit.split(":")[1].split()[0]))


def test_each_threshold_value_is_written_once_in_the_code() -> None:
    elsewhere = [
        hit
        for root in SOURCES
        for path in sorted(root.rglob("*.py"))
        if path != HOME
        for hit in threshold_definitions(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert elsewhere == []
    at_home = threshold_definitions(HOME.read_text(), "thresholds.py")
    names = [hit.split()[-1].lower() for hit in at_home]
    assert sorted(names) == sorted(set(names))  # the doctor's shared limits are not re-typed


def test_the_check_catches_a_threshold_typed_a_second_time() -> None:
    duplicate = (
        "from pydantic import Field\n"
        "class Mine:\n"
        "    kl_alert: float = Field(0.1, gt=0)\n"
        "    window: int = 5\n"
        "ANNEALED_FRACTION = 0.1\n"
        "clip_fraction_low = -0.0\n"
        "kl_alert_reason: str = 'a plan choice is not a threshold'\n"
    )
    assert threshold_definitions(duplicate, "x.py") == [
        "x.py:3 kl_alert",
        "x.py:4 window",
        "x.py:5 ANNEALED_FRACTION",
        "x.py:6 clip_fraction_low",
    ]


def test_spec_defaults_monitor_and_doctor_agree() -> None:
    spec = DiagnosticsSpec()
    for f in fields(Thresholds):
        assert getattr(spec, f.name) == getattr(DEFAULTS, f.name), f.name
    for name in SHARED:
        assert getattr(LIMITS, name) == getattr(DEFAULTS, name), name
    assert {"kl_alert", "kl_healthy_max", "clip_fraction_low", "late_fraction"} <= SHARED


def test_the_diagnostics_guide_quotes_the_defined_values() -> None:
    guide = (ROOT / "docs" / "guides" / "diagnostics.md").read_text()
    quoted = re.findall(r"`(\w+)` \(([-0-9.e]+)\)", guide)
    checked = {name for name, _ in quoted if name in NAMES}
    assert checked >= {"kl_healthy_max", "kl_alert", "clip_fraction_high", "drift_clip_fraction"}
    for name, value in quoted:
        if name in NAMES:
            assert float(value) == getattr(DEFAULTS, name), f"{name} quoted as {value}"

"""A safe reader for the Python literals in rl-baselines3-zoo hyperparameter files.

The zoo writes `policy_kwargs` and `normalize` as Python source, e.g.
`"dict(log_std_init=-2, activation_fn=nn.ReLU, net_arch=dict(pi=[256], vf=[256]))"`,
and evaluates it. We never evaluate or import anything: the text is parsed with `ast` and only
literal nodes are converted (numbers, strings, booleans, None, lists, tuples, `{...}` with string
keys, `dict(key=value, ...)` calls) plus `nn.<Activation>` names, which become an `Activation`
holding our name for it. Anything else raises `LiteralError` naming what it met.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

MAX_LITERAL_CHARS = 10_000
MAX_DEPTH = 16

# torch.nn activation classes the platform's `policy.activation` can express.
ACTIVATION_NAMES = {"Tanh": "tanh", "ReLU": "relu", "ELU": "elu", "LeakyReLU": "leaky_relu"}
_NN_PREFIXES = (("nn",), ("th", "nn"), ("torch", "nn"))


class LiteralError(ValueError):
    """The text is not a literal this reader accepts; the message says what was found."""


@dataclass(frozen=True)
class Activation:
    """An `nn.<Name>` reference: `name` is the platform's activation name (`relu`, ...)."""

    name: str
    source: str  # as written, e.g. "nn.ReLU"


def parse_literal(text: str) -> Any:
    """The value of a Python literal expression, without evaluating or importing anything."""
    if len(text) > MAX_LITERAL_CHARS:
        raise LiteralError(f"is longer than {MAX_LITERAL_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise LiteralError(f"is not a Python expression ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise LiteralError("is too deeply nested or malformed to read") from None
    return _convert(tree.body, 0)


def _convert(node: ast.AST, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise LiteralError(f"nests more than {MAX_DEPTH} levels deep")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (bool, int, float, str)) or node.value is None:
            return node.value
        raise LiteralError(f"holds a constant of type {type(node.value).__name__}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _convert(node.operand, depth + 1)
        if isinstance(operand, bool) or not isinstance(operand, (int, float)):
            raise LiteralError("applies a sign to something that is not a number")
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_convert(item, depth + 1) for item in node.elts]
    if isinstance(node, ast.Dict):
        return _dict_display(node, depth)
    if isinstance(node, ast.Call):
        return _dict_call(node, depth)
    if isinstance(node, ast.Attribute):
        return _activation(node)
    if isinstance(node, ast.Name):
        raise LiteralError(f"names {node.id!r}, which is not a literal")
    raise LiteralError(f"holds a {type(node).__name__} expression, which is not a literal")


def _dict_display(node: ast.Dict, depth: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key_node, value_node in zip(node.keys, node.values, strict=True):
        if key_node is None:
            raise LiteralError("unpacks a mapping (**), which is not a literal")
        key = _convert(key_node, depth + 1)
        if not isinstance(key, str):
            raise LiteralError(f"has the key {key!r}; keys must be strings")
        if key in result:
            raise LiteralError(f"sets the key {key!r} twice")
        result[key] = _convert(value_node, depth + 1)
    return result


def _dict_call(node: ast.Call, depth: int) -> dict[str, Any]:
    if not (isinstance(node.func, ast.Name) and node.func.id == "dict"):
        called = ast.unparse(node.func)
        raise LiteralError(f"calls {called}(...); only dict(key=value, ...) is read")
    if node.args:
        raise LiteralError("calls dict() with positional arguments; only key=value is read")
    result: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise LiteralError("unpacks a mapping (**) in dict(), which is not a literal")
        if keyword.arg in result:
            raise LiteralError(f"sets the key {keyword.arg!r} twice")
        result[keyword.arg] = _convert(keyword.value, depth + 1)
    return result


def _dotted(node: ast.AST) -> tuple[str, ...] | None:
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else (*head, node.attr)
    return None


def _activation(node: ast.Attribute) -> Activation:
    parts = _dotted(node)
    written = ast.unparse(node)
    if parts is None or parts[:-1] not in _NN_PREFIXES:
        raise LiteralError(f"names {written}, which is not a literal")
    name = ACTIVATION_NAMES.get(parts[-1])
    if name is None:
        known = ", ".join(f"nn.{cls}" for cls in ACTIVATION_NAMES)
        raise LiteralError(f"names the activation {written}, which the platform lacks ({known})")
    return Activation(name, written)

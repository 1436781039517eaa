"""Small markdown helpers shared by the reference generators."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any


def cell(value: Any) -> str:
    """One line of text for a table cell: pipes escaped, and `<` outside code spans too (a
    description's `<home>` is text, not an HTML tag)."""
    text = " ".join(("" if value is None else str(value)).split())
    pieces = text.split("`")
    pieces[::2] = [piece.replace("<", "&lt;") for piece in pieces[::2]]
    return "`".join(pieces).replace("|", "\\|")


def code(value: Any) -> str:
    """Inline code for a value, JSON-formatted when it is not a string."""
    text = value if isinstance(value, str) else json.dumps(value)
    return f"`{text}`" if text != "" else '`""`'


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A markdown table; an empty body still renders the header."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


GENERATED_NOTE = (
    "!!! note\n    This page is generated from the code at every build of the documentation "
    "(`docs/hooks/`); it always matches the version you are reading.\n"
)

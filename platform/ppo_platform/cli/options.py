"""Options several commands share."""

from __future__ import annotations

from typing import Annotated

import typer

Overrides = Annotated[
    list[str] | None,
    typer.Option(
        "--set", help="Override a field: dotted.path=value (repeatable); validated as usual."
    ),
]

"""The one error body of the REST API: its kind, a sentence, and for bad input every issue."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class IssuePublic(BaseModel):
    """One thing wrong with an input: where, what it held, and what to do instead."""

    path: str = Field(description="The field, dotted (e.g. `update.epochs`); empty for the whole.")
    message: str
    value: Any = Field(None, description="The value that was refused, when there is one.")
    line: int | None = Field(None, description="Line in the YAML document, when known.")
    column: int | None = None
    fix: str | None = Field(None, description="What to do instead.")
    rule: str | None = Field(None, description="The refusal rule, for unsafe settings.")


class ErrorPublic(BaseModel):
    """Every error response: its kind, a sentence, and for bad input every issue."""

    type: str = Field(description="The error's kind, e.g. SpecError, NotFoundError.")
    message: str
    issues: list[IssuePublic] = Field(default_factory=list)

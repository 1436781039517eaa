"""One error type per layer, mapped to exit codes and HTTP statuses in one place each."""

from __future__ import annotations

from dataclasses import dataclass


class PlatformError(Exception):
    """Root of every error the platform raises on purpose."""


@dataclass(frozen=True)
class SpecIssue:
    """One thing wrong with a spec: where it is, what it holds, and what to do instead."""

    path: str
    message: str
    value: object = None
    line: int | None = None
    column: int | None = None
    fix: str | None = None

    def format(self, source: str | None = None) -> str:
        where = source or "<spec>"
        if self.line is not None:
            where += f":{self.line}:{self.column or 1}"
        field = self.path or "(document)"
        text = f"{where}: {field}"
        if self.value is not None:
            text += f" = {_short_repr(self.value)}"
        text += f": {self.message}"
        if self.fix:
            text += f" Fix: {self.fix}"
        return text


def _short_repr(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class SpecError(PlatformError):
    """A spec that cannot be used: malformed, invalid or refused. Carries every issue found."""

    def __init__(self, issues: list[SpecIssue], source: str | None = None) -> None:
        self.issues = list(issues)
        self.source = source
        super().__init__(self.render())

    @property
    def refused(self) -> bool:
        return any(issue.message.startswith("refused") for issue in self.issues)

    def render(self) -> str:
        return "\n".join(issue.format(self.source) for issue in self.issues)

    def to_dict(self) -> list[dict[str, object]]:
        return [
            {
                "path": i.path,
                "value": i.value if isinstance(i.value, (int, float, str, bool)) else repr(i.value),
                "line": i.line,
                "column": i.column,
                "message": i.message,
                "fix": i.fix,
            }
            for i in self.issues
        ]


class TrainingError(PlatformError):
    """Training could not continue (non-finite loss or parameters, a broken environment, ...)."""


class RunNotFoundError(PlatformError):
    """A run id that the tracking store does not know, or that has nothing to resume from."""

"""Every error the platform raises on purpose, by kind, and the one mapping of each kind to a
CLI exit code (`exit_code`) and to an HTTP status (`http_status`).

    PlatformError                     root
      IssueError                      names the inputs at fault (SpecIssues), a JSON body
        BadInputError                 bad input: an option, a path, a storage URL      2 / 422
          SpecError                   a spec field; `refused` if a refusal rule broke   2 / 422
        ConflictError                 clashes with what exists (a study, another spec) 2 / 409
      NotFoundError                   an id nobody knows (RunNotFoundError)            2 / 404
      LimitError                      over a configured limit (queued jobs per key)    2 / 429
      UnavailableError                a database or store that does not answer         3 / 503
      TrainingError                   training (or a whole study) failed                1 / 500
        TrackingError                 the tracking process died or could not store     1 / 500
        EnvCrashError                 the environment's own code raised (kept as data) 1 / 500

Exit 3 is apart from 2 and 1 so that a script can retry it: the input was fine, the service
was not. Ctrl-C (KeyboardInterrupt) exits 130, SIGTERM (Terminated) 143. Nothing is
classified by its message text.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_UNAVAILABLE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports it


class PlatformError(Exception):
    """Root of every error the platform raises on purpose."""


@dataclass(frozen=True)
class SpecIssue:
    """One thing wrong with an input: where it is, what it holds, and what to do instead.

    `rule` names the refusal rule (spec/rules.py) for a well-formed but unsafe setting, and is
    None for a plain mistake.
    """

    path: str
    message: str
    value: object = None
    line: int | None = None
    column: int | None = None
    fix: str | None = None
    rule: str | None = None

    def format(self, source: str | None = None) -> str:
        # An option's issue (source `--resume`, path `--resume`) names itself once.
        where = source if source and source != self.path else None
        if self.line is not None:
            where = f"{where or '<spec>'}:{self.line}:{self.column or 1}"
        field = self.path or "(document)"
        text = f"{where}: {field}" if where else field
        if self.value is not None:
            text += f" = {_short_repr(self.value)}"
        text += f": {self.message}"
        if self.fix:
            text += f" Fix: {self.fix}"
        return text


def _short_repr(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class ShownValue:
    """A value that is carried only as its repr: what an issue shows of an object that may not
    cross a process boundary (it prints exactly as the original did)."""

    text: str

    def __repr__(self) -> str:
        return self.text


PLAIN = (str, int, float, bool, type(None), ShownValue)


def _plain(value: object) -> object:
    """`value` if it is plain data (any process can rebuild it), else its repr."""
    if isinstance(value, PLAIN):
        return value
    plain_items = isinstance(value, (list, tuple)) and all(isinstance(v, PLAIN) for v in value)
    if plain_items and type(value) in (list, tuple):
        return value
    return ShownValue(repr(value))


class IssueError(PlatformError):
    """An error that names every input at fault; `to_dict()` is its HTTP body.

    It crosses process boundaries (intake pool, executors, Ray) by one rule, `__reduce__`: the
    class, its issues with their values as plain data, and its source, rebuilt through
    `__init__`; never through its message text.
    """

    def __init__(self, issues: list[SpecIssue], source: str | None = None) -> None:
        self.issues = [replace(issue, value=_plain(issue.value)) for issue in issues]
        self.source = source
        super().__init__(self.render())

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.issues, self.source))

    @property
    def refused(self) -> bool:
        """True if a refusal rule (not a plain mistake) broke: the issue carries its rule."""
        return any(issue.rule is not None for issue in self.issues)

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
                "rule": i.rule,
            }
            for i in self.issues
        ]


class BadInputError(IssueError):
    """Input that cannot be used: a CLI option, a folder, a storage URL (not a spec field)."""


class SpecError(BadInputError):
    """A spec that cannot be used: malformed, invalid or refused. Carries every issue found."""


class ConflictError(IssueError):
    """Input that clashes with what already exists, e.g. a study started from another spec."""


class NotFoundError(PlatformError):
    """Something asked for by id or name that does not exist."""


class RunNotFoundError(NotFoundError):
    """A run id that the tracking store does not know, or that has nothing to resume from."""


class LimitError(PlatformError):
    """A request over a configured limit (e.g. queued experiments per API key); retry later,
    after `retry_after` seconds when the limit knows when (HTTP: the Retry-After header)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.retry_after))


class UnavailableError(PlatformError):
    """A database, store or service that does not answer; the same call may work later."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be: every interrupt path (checkpoint, KILLED) runs."""


class TrainingError(PlatformError):
    """Training could not continue (non-finite loss or parameters, a broken environment, ...)."""


class TrackingError(TrainingError):
    """The run's tracking process died or could not store what it was handed: the run stops
    rather than lose metrics silently (the message says why)."""


class EnvCrashError(TrainingError):
    """The environment's own code raised: its exception's type and message kept apart, with
    the env id, the run's env step, and where the full traceback was saved. It crosses process
    boundaries as its fields (`__reduce__`), never as message text."""

    def __init__(
        self,
        env_id: str,
        exception_type: str,
        exception_message: str,
        *,
        step: int | None = None,
        env_index: int | None = None,
        traceback_text: str = "",
        traceback_path: str | None = None,
    ) -> None:
        self.env_id, self.exception_type = env_id, exception_type
        self.exception_message, self.step, self.env_index = exception_message, step, env_index
        self.traceback_text, self.traceback_path = traceback_text, traceback_path
        super().__init__(self.render())

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_env_crash, (self.fields(), self.traceback_text))

    @property
    def short_type(self) -> str:
        """The exception's class name without its module (`ValveJammed`)."""
        return self.exception_type.rsplit(".", 1)[-1]

    def render(self) -> str:
        where = f" after {self.step} env steps" if self.step is not None else ""
        which = f" (env {self.env_index})" if self.env_index is not None else ""
        text = f"{self.env_id}{which} raised {self.short_type}{where}: {self.exception_message}"
        if self.traceback_path:
            text += f"\nfull traceback: {self.traceback_path}"
        return text

    def reason(self) -> str:
        """One line for a job's record: the env's exception first, no path of this machine."""
        where = f" after {self.step} env steps" if self.step is not None else ""
        return f"{self.short_type}: {self.exception_message} (raised by {self.env_id}{where})"

    def fields(self) -> dict[str, object]:
        """The error as data (what the run's tags and the job's record keep)."""
        return {
            "env_id": self.env_id,
            "exception_type": self.exception_type,
            "exception_message": self.exception_message,
            "step": self.step,
            "env_index": self.env_index,
            "traceback_path": self.traceback_path,
        }


def _rebuild_env_crash(fields: dict[str, object], traceback_text: str) -> EnvCrashError:
    return EnvCrashError(
        str(fields["env_id"]),
        str(fields["exception_type"]),
        str(fields["exception_message"]),
        step=fields["step"],  # type: ignore[arg-type]
        env_index=fields["env_index"],  # type: ignore[arg-type]
        traceback_text=traceback_text,
        traceback_path=fields["traceback_path"],  # type: ignore[arg-type]
    )


# The one mapping of each kind to an exit code and an HTTP status; the closest class wins.
EXIT_CODES: dict[type[BaseException], int] = {
    BadInputError: EXIT_BAD_INPUT,
    ConflictError: EXIT_BAD_INPUT,
    NotFoundError: EXIT_BAD_INPUT,
    LimitError: EXIT_BAD_INPUT,
    UnavailableError: EXIT_UNAVAILABLE,
    EnvCrashError: EXIT_FAILED,
    TrainingError: EXIT_FAILED,
    PlatformError: EXIT_FAILED,
    Terminated: EXIT_TERMINATED,
    KeyboardInterrupt: EXIT_INTERRUPTED,
}
HTTP_STATUSES: dict[type[BaseException], int] = {
    BadInputError: 422,
    ConflictError: 409,
    NotFoundError: 404,
    LimitError: 429,
    UnavailableError: 503,
    EnvCrashError: 500,
    TrainingError: 500,
    PlatformError: 500,
}


def _lookup(table: dict[type[BaseException], int], error: BaseException, default: int) -> int:
    for kind in type(error).__mro__:
        if kind in table:
            return table[kind]
    return default


def exit_code(error: BaseException) -> int:
    """The CLI exit code for `error` (1 for anything the table does not name)."""
    return _lookup(EXIT_CODES, error, EXIT_FAILED)


def http_status(error: BaseException) -> int:
    """The HTTP status for `error` (500 for anything the table does not name)."""
    return _lookup(HTTP_STATUSES, error, 500)

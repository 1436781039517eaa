"""The reward vocabulary: programmatic rewards with validated parameters, or a reward model.

A reward scores a whole response; the trainer puts the score on its last token. Nothing here is
looked up by an import path: the names in VOCABULARY are the whole vocabulary.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import LMTrainerError

MAX_PATTERN_LENGTH = 200
PATTERN_MEMORY_BYTES = 8 * 2**20  # RE2's budget for one compiled pattern


def compile_linear(pattern: str) -> Any:
    """`pattern` compiled by RE2: matching takes time linear in the text, whatever the pattern
    (Python's `re` backtracks, and `(x+x+)+y` on a long text never ends). What RE2 cannot
    express in linear time (backreferences, lookaround) is refused with the reason."""
    import re2  # google-re2, a project dependency

    options = re2.Options()
    options.log_errors = False  # the refusal below says why, once
    options.max_mem = PATTERN_MEMORY_BYTES
    try:
        return re2.compile(pattern, options=options)
    except re2.error as error:
        reason = (
            error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else error
        )
        raise LMTrainerError(
            f"pattern {pattern!r} is not a valid regular expression for RE2 ({reason}); "
            "patterns run on RE2 (linear time): no backreferences (\\1) or lookaround "
            "((?=...), (?!...), (?<=...)); rewrite it without them"
        ) from None


@dataclass(frozen=True)
class Sample:
    """One scored response and what it answered."""

    prompt: str
    response: str
    reference: str | None = None
    response_tokens: int = 0
    task: str = "all"


def _finite(name: str, value: object) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value)):
        raise LMTrainerError(f"{name} must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class ExactAnswer:
    """`correct` when the response (stripped) equals the reference answer, else `wrong`."""

    correct: float = 1.0
    wrong: float = 0.0
    needs_reference = True

    def __post_init__(self) -> None:
        _finite("correct", self.correct)
        _finite("wrong", self.wrong)

    def __call__(self, sample: Sample) -> float:
        if sample.reference is None:
            raise LMTrainerError(
                "exact_answer needs a reference answer for every prompt; add the answer field "
                "to the prompts file or use another reward"
            )
        return self.correct if sample.response.strip() == sample.reference.strip() else self.wrong


@dataclass(frozen=True)
class ContainsText:
    """`score` when the response contains `text` (case-sensitive unless told), else 0."""

    text: str
    score: float = 1.0
    case_sensitive: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text:
            raise LMTrainerError(f"text must be a non-empty string, got {self.text!r}")
        _finite("score", self.score)

    def __call__(self, sample: Sample) -> float:
        response, text = sample.response, self.text
        if not self.case_sensitive:
            response, text = response.lower(), text.lower()
        return self.score if text in response else 0.0


@dataclass(frozen=True)
class RegexMatch:
    """`score` when `pattern` is found in the response, else 0."""

    pattern: str
    score: float = 1.0
    compiled: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str) or not 0 < len(self.pattern) <= MAX_PATTERN_LENGTH:
            raise LMTrainerError(
                f"pattern must be a string of 1 to {MAX_PATTERN_LENGTH} characters, "
                f"got {self.pattern!r}"
            )
        object.__setattr__(self, "compiled", compile_linear(self.pattern))
        _finite("score", self.score)

    def __call__(self, sample: Sample) -> float:
        return self.score if self.compiled.search(sample.response) else 0.0


@dataclass(frozen=True)
class LengthPenalty:
    """-per_token for every response token beyond `free_tokens`."""

    per_token: float = 0.01
    free_tokens: int = 0

    def __post_init__(self) -> None:
        if _finite("per_token", self.per_token) < 0:
            raise LMTrainerError(f"per_token must be >= 0, got {self.per_token!r}")
        if not (isinstance(self.free_tokens, int) and self.free_tokens >= 0):
            raise LMTrainerError(f"free_tokens must be an integer >= 0, got {self.free_tokens!r}")

    def __call__(self, sample: Sample) -> float:
        return -self.per_token * max(0, sample.response_tokens - self.free_tokens)


ProgrammaticReward = Callable[[Sample], float]
VOCABULARY: dict[str, type] = {
    "exact_answer": ExactAnswer,
    "contains": ContainsText,
    "regex": RegexMatch,
    "length_penalty": LengthPenalty,
}


@dataclass(frozen=True)
class WeightedSum:
    """A combination: sum of weight x reward over its terms."""

    terms: tuple[tuple[float, ProgrammaticReward], ...]

    def __post_init__(self) -> None:
        if not self.terms:
            raise LMTrainerError("a reward combination needs at least one term")
        for weight, _ in self.terms:
            _finite("weight", weight)

    def __call__(self, sample: Sample) -> float:
        return sum(weight * reward(sample) for weight, reward in self.terms)


def build_reward(name: str, params: Mapping[str, Any] | None = None) -> ProgrammaticReward:
    """The vocabulary's reward `name` with `params`; unknown names and parameters are refused."""
    if name not in VOCABULARY:
        raise LMTrainerError(
            f"reward {name!r} is not in the vocabulary; use one of {sorted(VOCABULARY)} "
            "(or a reward model)"
        )
    cls = VOCABULARY[name]
    allowed = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(params or {}) - allowed)
    if unknown:
        raise LMTrainerError(
            f"reward {name!r} has no parameter {unknown[0]!r}; its parameters are {sorted(allowed)}"
        )
    try:
        return cls(**dict(params or {}))  # type: ignore[no-any-return]
    except TypeError as error:
        raise LMTrainerError(
            f"reward {name!r}: {error}; its parameters are {sorted(allowed)}"
        ) from None


class RewardModel:
    """A local sequence-classification model (one label) scoring prompt + response."""

    def __init__(self, path: str | Path, batch_size: int = 16) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.model = AutoModelForSequenceClassification.from_pretrained(
            Path(path), local_files_only=True
        )
        if self.model.config.num_labels != 1:
            raise LMTrainerError(
                f"reward model {str(path)!r} has {self.model.config.num_labels} labels; "
                "a reward model has exactly one (num_labels=1)"
            )
        self.model.eval().requires_grad_(False)
        self.tokenizer = AutoTokenizer.from_pretrained(Path(path), local_files_only=True)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model.config.pad_token_id = self.tokenizer.pad_token_id
        self.batch_size = batch_size

    def score(self, samples: Sequence[Sample]) -> list[float]:
        import torch

        scores: list[float] = []
        for start in range(0, len(samples), self.batch_size):
            chunk = samples[start : start + self.batch_size]
            encoded = self.tokenizer(
                [s.prompt + s.response for s in chunk], return_tensors="pt", padding=True
            )
            with torch.no_grad():
                scores += self.model(**encoded).logits[:, 0].float().tolist()
        return scores


def score_samples(
    reward: ProgrammaticReward | RewardModel, samples: Sequence[Sample]
) -> list[float]:
    """One score per sample, from either kind of reward."""
    if isinstance(reward, RewardModel):
        return reward.score(samples)
    return [float(reward(sample)) for sample in samples]

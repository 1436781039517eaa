"""Schema of the optional `sweep:` and `tune:` sections of a spec.

Paths are dotted spec paths (`update.epochs`); the values they produce are validated by
building the full spec for each grid point / trial, so refusal rules apply to them too.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ppo_platform.spec.base import StrictModel

DottedPath = Annotated[
    str,
    Field(pattern=r"^[a-z_]+(\.[a-z_]+)*$", description="A dotted spec path, e.g. update.epochs."),
]
GridValue = str | int | float | bool | None | list[int] | list[float]


class SweepSpec(StrictModel):
    """A grid over spec fields crossed with seeds; every point is a full, validated spec."""

    grid: dict[DottedPath, Annotated[list[GridValue], Field(min_length=1)]] = Field(
        default_factory=dict, description="Dotted spec path -> values to try."
    )
    variants: list[Annotated[dict[DottedPath, GridValue], Field(min_length=1)]] = Field(
        default_factory=list,
        description="Explicit variants, each a set of dotted path -> value changed together "
        "(e.g. [{algorithm: ppo, update.epochs: 4}, {algorithm: a2c}]); crossed with the grid.",
    )
    seeds: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=lambda: [0], min_length=1, description="Seeds run for every grid point."
    )
    threshold: float | None = Field(
        None, description="Return threshold for the report's 'env steps to reach' column."
    )


class FloatDistribution(StrictModel):
    type: Literal["float"] = Field(description="A real number between `low` and `high`.")
    low: float = Field(description="Smallest value sampled.")
    high: float = Field(description="Largest value sampled.")
    log: bool = Field(False, description="Sample on a log scale (e.g. a learning rate).")

    @model_validator(mode="after")
    def _ordered(self) -> FloatDistribution:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        if self.log and self.low <= 0:
            raise ValueError(f"a log-scale range needs low > 0, got {self.low}")
        return self


class IntDistribution(StrictModel):
    type: Literal["int"] = Field(description="An integer between `low` and `high`.")
    low: int = Field(description="Smallest value sampled.")
    high: int = Field(description="Largest value sampled (inclusive).")
    step: int = Field(1, ge=1, description="Spacing of the values sampled.")
    log: bool = Field(False, description="Sample on a log scale.")

    @model_validator(mode="after")
    def _ordered(self) -> IntDistribution:
        if not self.low <= self.high:
            raise ValueError(f"low ({self.low}) must not exceed high ({self.high})")
        if self.log and (self.low <= 0 or self.step != 1):
            raise ValueError("a log-scale int range needs low > 0 and step 1")
        return self


class CategoricalDistribution(StrictModel):
    type: Literal["categorical"] = Field(description="One of a list of values.")
    choices: list[GridValue] = Field(min_length=1, description="The values to choose from.")


Distribution = Annotated[
    FloatDistribution | IntDistribution | CategoricalDistribution, Field(discriminator="type")
]


class SamplerSpec(StrictModel):
    type: Literal["tpe", "random", "cmaes", "grid"] = Field(
        "tpe", description="Optuna sampler: TPE, random search, CMA-ES, or the full grid."
    )
    seed: int = Field(0, ge=0, description="Sampler seed (pinned: Optuna's defaults change).")
    n_startup_trials: int = Field(5, ge=0, description="Random trials before TPE/CMA-ES model.")


class PrunerSpec(StrictModel):
    type: Literal["median", "successive_halving", "hyperband", "none"] = Field(
        "median", description="Optuna pruner that stops unpromising trials early (`none`: off)."
    )
    n_startup_trials: int = Field(5, ge=0, description="Trials completed before pruning starts.")
    n_warmup_evaluations: int = Field(
        1,
        ge=0,
        description="Evaluations a trial reports before it may be pruned (median); "
        "the first rung (min resource) for successive_halving / hyperband.",
    )
    reduction_factor: int = Field(
        3, ge=2, description="successive_halving / hyperband: keep 1 in this many per rung."
    )


class VerifySpec(StrictModel):
    """Held-out verification: after the search, the top trials re-run on seeds never searched."""

    seeds: list[Annotated[int, Field(ge=0)]] = Field(
        min_length=1,
        max_length=20,
        description="Held-out seeds (none of the search's seeds budget.seed .. budget.seed + "
        "seeds_per_trial - 1); each verified trial trains once per seed.",
    )
    top_trials: int = Field(
        3, ge=1, le=20, description="How many of the best searched trials are verified."
    )
    episodes: int | None = Field(
        None,
        ge=1,
        le=10_000,
        description="Evaluation episodes of each held-out run (default: evaluation.episodes).",
    )
    solve_threshold: float | None = Field(
        None,
        allow_inf_nan=False,
        description="A held-out seed solves the task when its score reaches this (e.g. 475 for "
        "CartPole-v1). Set: each verified trial gets its solve rate with an exact 95% interval "
        "and the winner is the trial with the highest lower bound of that interval. Absent: "
        "the highest lower bound of the bootstrap 95% interval of the held-out mean "
        "(docs/guides/tuning.md).",
    )

    @model_validator(mode="after")
    def _distinct(self) -> VerifySpec:
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"held-out seeds repeat: {self.seeds}")
        return self


class ObjectiveSpec(StrictModel):
    """What a trial is scored by; each objective fixes its direction (see `directions`)."""

    type: Literal["final_return", "steps_to_threshold", "eval_auc", "return_and_steps"] = Field(
        "final_return",
        description="`final_return`: mean eval return at the end (maximize); "
        "`steps_to_threshold`: env steps until an evaluation reaches `threshold` (minimize); "
        "`eval_auc`: area under the eval curve over env steps, divided by the steps it spans "
        "(maximize); `return_and_steps`: final return and steps to threshold at once "
        "(a multi-objective study with a Pareto front; trials are not pruned).",
    )
    threshold: float | None = Field(
        None,
        description="Eval return a seed must reach (steps_to_threshold, return_and_steps), "
        "e.g. 475 on CartPole-v1.",
    )
    penalty: int | None = Field(
        None,
        ge=0,
        description="Env steps added to the budget for a seed that never reaches the threshold: "
        "it scores budget.total_timesteps + penalty (default: the budget again, so a miss "
        "scores twice the budget).",
    )

    @property
    def multi(self) -> bool:
        return self.type == "return_and_steps"

    @property
    def directions(self) -> list[str]:
        """Optuna's study direction(s), in the order of the trial's values."""
        return {
            "final_return": ["maximize"],
            "eval_auc": ["maximize"],
            "steps_to_threshold": ["minimize"],
            "return_and_steps": ["maximize", "minimize"],
        }[self.type]

    @property
    def needs_threshold(self) -> bool:
        return self.type in ("steps_to_threshold", "return_and_steps")

    @model_validator(mode="after")
    def _threshold(self) -> ObjectiveSpec:
        if self.needs_threshold and self.threshold is None:
            raise ValueError(
                f"objective {self.type} needs a threshold: set tune.objective.threshold "
                "(e.g. 475 for CartPole-v1)"
            )
        if not self.needs_threshold and (self.threshold is not None or self.penalty is not None):
            raise ValueError(
                f"objective {self.type} uses no threshold or penalty: remove them, or use "
                "type steps_to_threshold or return_and_steps"
            )
        return self


class RacingSpec(StrictModel):
    """Racing over seeds: a trial starts on `seeds_per_trial` seeds; one whose score ranks in
    the top 1/reduction_factor of the trials that ran as many seeds earns reduction_factor
    times more, up to `seeds_max`; the others stop there (pruned, `raced out`)."""

    seeds_max: int = Field(ge=2, le=20, description="Seeds a trial that wins every race runs.")
    reduction_factor: int = Field(
        3,
        ge=2,
        le=10,
        description="Keep 1 in this many trials per rung; the survivors run this many times "
        "more seeds (capped at seeds_max).",
    )
    n_startup_trials: int = Field(
        3,
        ge=1,
        description="Trials that must have finished a rung before a trial can be raced out "
        "at it (the first ones always earn more seeds).",
    )


class TuneSpec(StrictModel):
    """An Optuna study over the spec: each trial is a full, validated spec."""

    metric: Literal["final_eval_return", "eval_auc"] | None = Field(
        None,
        description="Older form of `objective` (absent: final_eval_return). "
        "`final_eval_return`: mean eval return at the end; `eval_auc`: mean of the eval curve "
        "(rewards fast learners).",
    )
    direction: Literal["maximize", "minimize"] | None = Field(
        None,
        description="With `metric`: whether a higher or a lower metric is better (absent: "
        "maximize). An `objective` has its own direction.",
    )
    n_trials: int = Field(20, ge=1, le=100_000, description="Trials the study runs in all.")
    timeout: float | None = Field(None, gt=0, description="Stop starting trials after this many s.")
    seeds_per_trial: int = Field(1, ge=1, le=20, description="Seeds each trial is scored over.")
    aggregate: Literal["mean", "quantile"] = Field(
        "mean", description="How a trial's seeds combine: mean, or the `quantile` (pessimistic)."
    )
    quantile: float = Field(
        0.25,
        ge=0,
        le=1,
        description="With `aggregate: quantile`: 0 scores a trial by its worst seed.",
    )
    sampler: SamplerSpec = Field(default_factory=SamplerSpec)
    pruner: PrunerSpec = Field(default_factory=PrunerSpec)
    space: dict[DottedPath, Distribution] = Field(
        default_factory=dict, description="Dotted spec path -> distribution to sample."
    )
    verify: VerifySpec | None = Field(
        None,
        description="Re-run the top trials on held-out seeds after the search; best_spec.yaml "
        "is then the best by held-out score (absent: the best searched trial).",
    )
    objective: ObjectiveSpec | None = Field(
        None,
        description="What trials are scored by, with its direction (absent: `metric` and "
        "`direction`). Set either this or metric/direction, not both.",
    )
    start_points: list[dict[DottedPath, GridValue]] = Field(
        default_factory=list,
        max_length=20,
        description="Settings tried first, before the sampler's own (e.g. rl-baselines3-zoo's "
        "values): each maps dotted paths of `space` to a value it can sample; paths left out "
        "are sampled. The sampler learns from them like from any trial.",
    )
    racing: RacingSpec | None = Field(
        None,
        description="Racing over seeds: promising trials earn more seeds, up to "
        "racing.seeds_max (absent: every trial runs seeds_per_trial seeds).",
    )

    @property
    def scoring(self) -> ObjectiveSpec:
        """The objective in force: `objective`, or the one `metric` names."""
        if self.objective is not None:
            return self.objective
        if self.metric == "eval_auc":
            return ObjectiveSpec(type="eval_auc")
        return ObjectiveSpec(type="final_return")

    @property
    def directions(self) -> list[str]:
        """The study's direction(s): the objective's, or `direction` for a `metric`."""
        if self.objective is not None:
            return self.objective.directions
        return [self.direction or "maximize"]

    @property
    def multi(self) -> bool:
        """Two objectives: an Optuna multi-objective study (no pruning)."""
        return self.scoring.multi

    @property
    def seeds_max(self) -> int:
        """The most seeds a trial runs (racing's seeds_max, else seeds_per_trial)."""
        return self.racing.seeds_max if self.racing is not None else self.seeds_per_trial

    def rungs(self) -> list[int]:
        """Seed counts at which a racing trial is ranked: seeds_per_trial, x factor, ..."""
        if self.racing is None:
            return [self.seeds_per_trial]
        counts = [self.seeds_per_trial]
        while counts[-1] < self.racing.seeds_max:
            counts.append(min(counts[-1] * self.racing.reduction_factor, self.racing.seeds_max))
        return counts

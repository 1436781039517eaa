"""Racing over seeds: successive halving over seeds instead of over env steps.

A trial starts on `seeds_per_trial` seeds. Whenever it has run a rung's seeds (the rungs are
seeds_per_trial, x reduction_factor, ... up to racing.seeds_max), its score over those seeds
is ranked against every other trial that finished that rung (their scores are `race` user
attributes in the study's storage, so workers on other machines count too). In the top
1/reduction_factor it earns the next rung's seeds; otherwise it stops there: pruned as
`raced out`, its env steps counted like any other. The first `n_startup_trials` trials at a
rung always earn more seeds (nothing to rank against yet).

Only trials that ran all seeds_max seeds complete, so the best trial is always one scored on
the most seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ppo_platform.spec.search import TuneSpec

if TYPE_CHECKING:
    import optuna

RACE_ATTR = "race"  # {"<seeds>": score over that many seeds}


@dataclass(frozen=True)
class RaceDecision:
    promoted: bool
    seeds: int
    score: float
    rank: int  # 1 = best among `field`
    field: int  # trials ranked at this rung, this one included
    kept: int  # how many of them earn more seeds

    def describe(self) -> str:
        verdict = "earned more seeds" if self.promoted else "raced out"
        return (
            f"{verdict} after {self.seeds} seed(s): score {self.score:.4g} ranked "
            f"{self.rank} of {self.field} (top {self.kept} go on)"
        )


def is_rung(tune: TuneSpec, seeds_done: int) -> bool:
    """A point where a racing trial is ranked (never after its last seed)."""
    return tune.racing is not None and seeds_done in tune.rungs() and seeds_done < tune.seeds_max


def race(trial: optuna.Trial, tune: TuneSpec, seeds_done: int, score: float) -> RaceDecision:
    """Record the trial's score at this rung and rank it against the other trials'."""
    assert tune.racing is not None
    key = str(seeds_done)
    recorded = dict(trial.user_attrs.get(RACE_ATTR, {}))
    recorded[key] = score
    trial.set_user_attr(RACE_ATTR, recorded)
    others = [
        float(t.user_attrs[RACE_ATTR][key])
        for t in trial.study.get_trials(deepcopy=False)
        if t.number != trial.number and key in t.user_attrs.get(RACE_ATTR, {})
    ]
    sign = 1.0 if tune.directions[0] == "maximize" else -1.0
    rank = 1 + sum(sign * other > sign * score for other in others)
    field = len(others) + 1
    kept = max(1, math.floor(field / tune.racing.reduction_factor))
    promoted = len(others) < tune.racing.n_startup_trials or rank <= kept
    return RaceDecision(promoted, seeds_done, score, rank, field, kept)


def racing_line(tune: TuneSpec, raced_out: int) -> str:
    """The summary's statement of the racing (or its absence)."""
    if tune.racing is None:
        return f"- racing: off (every trial runs {tune.seeds_per_trial} seed(s))"
    rungs = " -> ".join(str(n) for n in tune.rungs())
    return (
        f"- racing over seeds: {rungs} seeds; at each rung the top 1/"
        f"{tune.racing.reduction_factor} of the trials that got there earn more seeds "
        f"(the first {tune.racing.n_startup_trials} always do); {raced_out} trial(s) raced out "
        "(counted as pruned; their env steps are in the totals). Only trials that ran all "
        f"{tune.seeds_max} seeds complete, so the best is scored on {tune.seeds_max} seeds."
    )

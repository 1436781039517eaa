"""Search space: `tune.space` -> Optuna distributions, sampling, and up-front checks.

Every reachable extreme of every parameter (low, high, each choice) is set into the base spec
and validated before anything runs, so a space that could only produce invalid or refused
specs is itself refused, naming the parameter and its bound (a refusal in the words of
`spec.rules.search_space_refusal`, the same as `validate` gives). Combinations (a minibatch larger
than the rollout) can still be invalid: those trials fail with the reason, never scored; but a
rollout larger than the budget is checked at its worst combination (the largest env.n_envs and
rollout.n_steps against the smallest budget), so no trial trains past its budget.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LMExperimentSpec, is_lm_data
from ppo_platform.spec.lm_rules import LM_GROUP_RULE
from ppo_platform.spec.loader import set_dotted
from ppo_platform.spec.rules import ROLLOUT_BUDGET_RULE, search_space_refusal
from ppo_platform.spec.search import (
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
    TuneSpec,
)
from ppo_platform.spec.workloads import AnySpec, spec_issues, validate_any

if TYPE_CHECKING:
    import optuna

Distribution = FloatDistribution | IntDistribution | CategoricalDistribution
# Spec sections a trial may not change: they describe the study, not one training run.
UNTUNABLE_ROOTS = ("tune", "sweep", "name")
MAX_GRID_POINTS = 100_000


def base_data(spec: AnySpec) -> dict[str, Any]:
    """The spec as plain data with every default filled in, without its `tune:` section."""
    data = spec.resolved()
    data.pop("tune", None)
    return data


def _encoded(choices: list[Any]) -> tuple[list[Any], dict[Any, Any]]:
    """Optuna choices must be scalars: lists (net_arch) become their JSON text."""
    if not any(isinstance(c, list) for c in choices):
        return list(choices), {}
    labels = [json.dumps(c) for c in choices]
    return labels, dict(zip(labels, choices, strict=True))


def decode(dist: Distribution, value: Any) -> Any:
    """The spec value behind an Optuna parameter value."""
    if isinstance(dist, CategoricalDistribution):
        _, labels = _encoded(dist.choices)
        return copy.deepcopy(labels.get(value, value))
    return value


def encode(dist: Distribution, value: Any) -> Any:
    """The Optuna parameter value of a spec value (a list choice is its JSON text)."""
    if isinstance(dist, CategoricalDistribution) and isinstance(value, list):
        return json.dumps(value)
    return value


def sample(trial: optuna.Trial, space: dict[str, Distribution]) -> dict[str, Any]:
    """Ask the trial for every parameter; returns dotted path -> spec value."""
    params: dict[str, Any] = {}
    for path, dist in space.items():
        if isinstance(dist, FloatDistribution):
            params[path] = trial.suggest_float(path, dist.low, dist.high, log=dist.log)
        elif isinstance(dist, IntDistribution):
            params[path] = trial.suggest_int(
                path, dist.low, dist.high, step=dist.step, log=dist.log
            )
        else:
            value = trial.suggest_categorical(path, _encoded(dist.choices)[0])
            params[path] = decode(dist, value)
    return params


def trial_data(data: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """A copy of the base data with each sampled value set at its dotted path."""
    result = copy.deepcopy(data)
    for path, value in params.items():
        set_dotted(result, path, value, source="tune")
    return result


def build_trial_spec(
    data: dict[str, Any], params: dict[str, Any], *, from_outside: bool
) -> AnySpec:
    """The full spec of one trial, validated and refusal-checked like any spec (SpecError)
    under the rules of the study's caller: a `ppo_lm` trial's prompts and model folders are
    checked too, and from outside (a service job) only inside the LM folder."""
    return validate_any(trial_data(data, params), source="trial", from_outside=from_outside)


def reachable_values(dist: Distribution) -> list[tuple[str, Any]]:
    """(bound name, value) for every extreme the distribution can sample."""
    if isinstance(dist, CategoricalDistribution):
        return [(f"choices[{i}]", choice) for i, choice in enumerate(dist.choices)]
    if isinstance(dist, IntDistribution):
        top = dist.low + (dist.high - dist.low) // dist.step * dist.step
        return [("low", dist.low), ("high", top)]
    return [("low", dist.low), ("high", dist.high)]


def grid_count(dist: Distribution) -> int | None:
    """How many values a finite distribution has, without listing them (None: a float range)."""
    if isinstance(dist, CategoricalDistribution):
        return len(dist.choices)
    if isinstance(dist, IntDistribution):
        return (dist.high - dist.low) // dist.step + 1
    return None


def grid_values(dist: Distribution) -> list[Any] | None:
    """Every value of a finite distribution (Optuna-encoded), or None for a float range."""
    if isinstance(dist, CategoricalDistribution):
        return _encoded(dist.choices)[0]
    if isinstance(dist, IntDistribution):
        return list(range(dist.low, dist.high + 1, dist.step))
    return None


def _schema_issues(data: dict[str, Any], from_outside: bool) -> list[SpecIssue]:
    try:
        validate_any(data, from_outside=from_outside)
    except SpecError as error:
        return error.issues
    return []


def _probe_issues(
    data: dict[str, Any], path: str, bound: str, value: Any, from_outside: bool
) -> list[SpecIssue]:
    """Schema errors, refusals and (LM) input problems of the base spec with one parameter at
    one extreme, under the caller's rules (`spec_issues`, as for a spec)."""
    from pydantic import ValidationError

    try:
        probe = trial_data(data, {path: value})
        model = LMExperimentSpec if is_lm_data(probe) else ExperimentSpec
        spec = model.model_validate(probe)
    except SpecError as error:  # the path runs through a plain value
        found = error.issues
    except ValidationError:
        found = _schema_issues(probe, from_outside)
    else:
        # Inconsistencies (minibatch > rollout) may be fixed by another sampled value.
        found = spec_issues(spec, from_outside=from_outside)
    return [
        search_space_refusal(path, bound, value, issue)
        if issue.rule is not None
        else SpecIssue(
            f"tune.space.{path}.{bound}",
            f"invalid: sampling {path} = {value!r} gives {issue.path or 'the spec'}: "
            + issue.message,
            value,
            fix=issue.fix,
        )
        for issue in found
    ]


def check_space(spec: AnySpec, *, from_outside: bool) -> None:
    """Refuse a search space that could sample an invalid or refused value (SpecError): every
    value it can reach is checked as a spec is, under the caller's rules (`from_outside`: the
    service's, where an LM path must stay inside the LM folder)."""
    tune = spec.tune
    if tune is None or not tune.space:
        raise SpecError(
            [
                SpecIssue(
                    "tune.space",
                    "the spec has no search space to tune.",
                    fix="add a tune: section with a space, or use --space auto.",
                )
            ]
        )
    data = base_data(spec)
    issues: list[SpecIssue] = []
    for path, dist in tune.space.items():
        if path.split(".")[0] in UNTUNABLE_ROOTS:
            issues.append(
                SpecIssue(
                    f"tune.space.{path}",
                    "cannot be tuned: it names the study, not a training setting.",
                    fix="remove it from the space.",
                )
            )
            continue
        for bound, value in reachable_values(dist):
            issues.extend(_probe_issues(data, path, bound, value, from_outside))
    issues.extend(_sampler_issues(tune))
    issues.extend(_pruner_issues(spec))
    if isinstance(spec, ExperimentSpec):
        issues.extend(rollout_over_budget_issues(spec))
    if isinstance(spec, LMExperimentSpec):
        issues.extend(lm_tune_issues(spec))
    if issues:
        raise SpecError(issues)


def sampled_range(spec: AnySpec, param: str, current: int) -> tuple[int, int]:
    """The smallest and largest whole number a study can sample for `param` (the spec's own
    value if the space does not tune it)."""
    dist = spec.tune.space.get(param) if spec.tune is not None else None
    numbers = [
        int(value)
        for _, value in ([] if dist is None else reachable_values(dist))
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    ]
    return min(numbers, default=current), max(numbers, default=current)


def rollout_over_budget_issues(spec: ExperimentSpec) -> list[SpecIssue]:
    """A space that can sample one rollout (env.n_envs x rollout.n_steps, each at its largest)
    larger than a budget it can sample (at its smallest): SB3 collects whole rollouts, so such a
    trial would train past its budget. Refused before any trial, by `tune` and the service
    alike (docs/guides/tuning.md)."""
    assert spec.tune is not None
    n_envs = sampled_range(spec, "env.n_envs", spec.env.n_envs)[1]
    n_steps = sampled_range(spec, "rollout.n_steps", spec.rollout.n_steps)[1]
    budget = sampled_range(spec, "budget.total_timesteps", spec.budget.total_timesteps)[0]
    if n_envs * n_steps <= budget:
        return []
    tuned = [p for p in ("env.n_envs", "rollout.n_steps") if p in spec.tune.space]
    lower = " or ".join(f"the highest {p} it samples" for p in tuned) or "the spec's rollout"
    return [
        SpecIssue(
            "tune.space",
            f"refused: the space can sample a rollout of env.n_envs x rollout.n_steps = "
            f"{n_envs} x {n_steps} = {n_envs * n_steps} env steps, larger than "
            f"budget.total_timesteps = {budget} (the smallest budget it can run); training "
            "collects whole rollouts, so such a trial would train past its budget.",
            n_envs * n_steps,
            fix=f"lower {lower}, or keep budget.total_timesteps at least {n_envs * n_steps}.",
            rule=ROLLOUT_BUDGET_RULE,
        )
    ]


def _sampler_issues(tune: TuneSpec) -> list[SpecIssue]:
    if tune.sampler.type != "grid":
        return []
    for path, dist in tune.space.items():
        if grid_count(dist) is None:
            return [
                SpecIssue(
                    f"tune.space.{path}",
                    "the grid sampler needs a finite space; this is a float range.",
                    fix="use type: categorical with choices, "
                    "an int range, or another sampler (tpe, random).",
                )
            ]
    size = grid_size(tune)
    if size > MAX_GRID_POINTS:
        return [
            SpecIssue(
                "tune.space",
                f"the grid has {size} points, over {MAX_GRID_POINTS}.",
                size,
                fix="use fewer choices, or the tpe sampler.",
            )
        ]
    return []


def _pruner_issues(spec: AnySpec) -> list[SpecIssue]:
    assert spec.tune is not None
    if isinstance(spec, LMExperimentSpec):
        field, every = "evaluation.every_updates", spec.evaluation.every_updates
    else:
        field, every = "evaluation.every_timesteps", spec.evaluation.every_timesteps
    if spec.tune.pruner.type == "none" or every > 0:
        return []
    return [
        SpecIssue(
            "tune.pruner.type",
            f"pruning needs periodic evaluations (its intermediate values), but {field} is 0.",
            spec.tune.pruner.type,
            fix=f"set {field} > 0, or pruner: {{type: none}}.",
        )
    ]


def lm_tune_issues(spec: LMExperimentSpec) -> list[SpecIssue]:
    """What a `ppo_lm` study needs: held-out prompts (a trial scores their mean reward) and
    no `verify` (held-out seed re-runs are for gymnasium studies)."""
    assert spec.tune is not None
    issues = []
    if spec.lm.eval_prompts is None:
        issues.append(
            SpecIssue(
                "lm.eval_prompts",
                "a ppo_lm trial is scored by the mean reward of greedy responses to held-out "
                "prompts, and the spec has none.",
                fix="set lm.eval_prompts to a JSONL file of held-out prompts.",
            )
        )
    if spec.tune.verify is not None:
        issues.append(
            SpecIssue(
                "tune.verify",
                "held-out seed re-runs are not available for ppo_lm studies.",
                fix="remove tune.verify (raise tune.seeds_per_trial to score on more seeds).",
            )
        )
    return [*issues, *_group_of_one_issues(spec)]


def _group_of_one_issues(spec: LMExperimentSpec) -> list[SpecIssue]:
    """A space that can sample a group estimator together with a group of one response: each
    probe sets one value on the base spec (`_probe_issues`), so with `gae` and a group of two
    or more in the spec, each value alone passes and only the pair is refused, here."""
    assert spec.tune is not None
    space = spec.tune.space
    if "advantage.estimator" not in space or "advantage.group_size" not in space:
        return []
    if spec.critic_free or spec.advantage.group_size < 2:
        return []  # the probes already refuse the pair
    estimators = [value for _, value in reachable_values(space["advantage.estimator"])]
    grouped = sorted({e for e in estimators if e in ("grpo", "rloo")})
    smallest = sampled_range(spec, "advantage.group_size", spec.advantage.group_size)[0]
    if not grouped or smallest >= 2:
        return []
    return [
        SpecIssue(
            "tune.space.advantage.group_size",
            f"refused: the space can sample advantage.estimator {' or '.join(grouped)} with "
            f"advantage.group_size {smallest}: a group of one response has none to compare "
            "(every advantage 0).",
            smallest,
            fix="sample advantage.group_size from 2 up, or set it to 2 or more in the spec.",
            rule=LM_GROUP_RULE,
        )
    ]


def grid_search_space(tune: TuneSpec) -> dict[str, list[Any]]:
    """The grid sampler's search space (only finite distributions; see `check_space`)."""
    return {path: grid_values(dist) or [] for path, dist in tune.space.items()}


def grid_size(tune: TuneSpec) -> int:
    """Points of the grid, counted, not listed: an int range may span billions (0 with a float
    range)."""
    size = 1
    for dist in tune.space.values():
        size *= grid_count(dist) or 0
    return size

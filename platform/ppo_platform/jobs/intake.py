"""Everything a spec must pass before it is queued: schema, refusals, a registered env id
that gymnasium can create with spaces PPO can use (the check `validate` and `run` make), its
sweep members or search space, and the per-key env-step limit.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from functools import lru_cache
from typing import Any, cast

from pydantic import TypeAdapter

from ppo_platform.envs.ids import (
    check_env_id,
    check_env_usable,
    refuse_importing_env,
    refuse_oversized_kwargs,
)
from ppo_platform.envs.vectorization import check_vectorization
from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.jobs.store import Submission
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.lm import LMExperimentSpec, is_lm_data
from ppo_platform.spec.loader import parse_spec_text, validate_data
from ppo_platform.spec.resources import budget_refusals
from ppo_platform.spec.rules import (
    rollout_over_budget_issue,
    search_space_refusal,
    trained_steps,
)
from ppo_platform.spec.workloads import AnySpec, load_any_spec_text
from ppo_platform.spec.wrappers import WrapperSpec
from ppo_platform.spec.yaml_source import PathKey, Position, check_spec_size, parse_yaml
from ppo_platform.training.compiled_path import uncompilable_issue

# env.wrappers back from the JSON the remembered env check is keyed by.
_WRAPPERS: TypeAdapter[list[Any]] = TypeAdapter(list[WrapperSpec])


def kind_of(spec: AnySpec) -> str:
    """run, seeds, sweep or tune: what the spec asks for follows from its sections."""
    if spec.tune is not None:
        return "tune"
    if spec.sweep is not None:
        return "sweep"
    seeds = spec.budget.seeds if isinstance(spec, ExperimentSpec) else None
    return "run" if seeds is None else "seeds"


@lru_cache(maxsize=256)
def _env_sizes(env_id: str, kwargs_json: str, wrappers_json: str, source: str) -> tuple[int, int]:
    """`check_env_usable`, remembered: the service sees the same few envs again and again and
    need not create each once per submission (only envs that passed are remembered). The
    wrappers are part of the key: they decide what the policy sees and whether the env fits."""
    wrappers = _WRAPPERS.validate_python(json.loads(wrappers_json))
    return check_env_usable(env_id, json.loads(kwargs_json), source, wrappers)


def check_env_remembered(spec: ExperimentSpec, source: str) -> None:
    """`check_spec_env` with the env check remembered; the resource budget is checked anew.
    Sizes and names come first: nothing is built (or hashed) from kwargs that fail them."""
    _refuse_named_or_oversized(spec, source)
    kwargs = json.dumps(spec.env.kwargs, sort_keys=True, default=repr)
    wrappers = json.dumps([w.model_dump(mode="json") for w in spec.env.wrappers], sort_keys=True)
    issues = budget_refusals(spec, *_env_sizes(spec.env.id, kwargs, wrappers, source))
    if issues:
        raise SpecError(issues, source)
    check_vectorization(spec, source)


def parse_spec(text: str, source: str = "request") -> ExperimentSpec:
    """A validated spec whose env id is a registered gymnasium id (nothing imported by name,
    checked before the env is created) and whose env PPO can train (`check_spec_env`)."""
    return spec_from_data(*parse_spec_text(text, source), source)


def spec_from_data(data: Any, positions: dict[PathKey, Position], source: str) -> ExperimentSpec:
    """`parse_spec` of text already parsed (`parse_spec_text`): a submission parses once."""
    spec = validate_data(data, positions, source)
    check_env_id(spec.env.id, source)
    check_env_remembered(spec, source)
    return spec


def refuse_rollout_over_budget(spec: ExperimentSpec, source: str) -> None:
    """SpecError if one rollout of `spec` is larger than its budget (it would train past it)."""
    issue = rollout_over_budget_issue(spec)
    if issue is not None:
        raise SpecError([issue], source)


def _reachable(spec: AnySpec, param: str) -> list[tuple[str, Any]]:
    """(bound, value) for every extreme a study's space can sample for `param` (none if the
    space does not tune it)."""
    from ppo_platform.tuning.space import reachable_values

    assert spec.tune is not None
    dist = spec.tune.space.get(param)
    return [] if dist is None else reachable_values(dist)


def run_steps_bound(spec: ExperimentSpec) -> int:
    """Env steps one run of a study (a trial's seed, a held-out run) can train at most: the
    largest budget its space can sample, rounded up to whole rollouts of the largest rollout
    it can sample (`check_space` has refused a rollout larger than the smallest budget)."""
    from ppo_platform.tuning.space import sampled_range

    assert spec.tune is not None
    largest = (
        sampled_range(spec, "env.n_envs", spec.env.n_envs)[1]
        * sampled_range(spec, "rollout.n_steps", spec.rollout.n_steps)[1]
    )
    largest_budget = sampled_range(spec, "budget.total_timesteps", spec.budget.total_timesteps)[1]
    if not {"env.n_envs", "rollout.n_steps"} & set(spec.tune.space):
        return -(-largest_budget // largest) * largest  # rollouts of the spec's one size
    # Whole rollouts of any size up to `largest` overshoot the budget by less than one.
    return largest_budget + largest - 1


def study_runs(spec: AnySpec) -> int:
    """Training runs a study can start: each trial on its most seeds (racing's seeds_max),
    then each verified trial once per held-out seed."""
    from ppo_platform.tuning.study import study_budget

    assert spec.tune is not None
    trials = study_budget(spec)
    runs = trials * spec.tune.seeds_max
    if spec.tune.verify is not None:
        runs += min(spec.tune.verify.top_trials, trials) * len(spec.tune.verify.seeds)
    return runs


def study_env_steps(spec: ExperimentSpec) -> int:
    """Env steps of every run a study can start, every run at its bound."""
    return run_steps_bound(spec) * study_runs(spec)


def check_sampled_envs(spec: ExperimentSpec, source: str) -> None:
    """Every env a study's space can sample passes the checks a submitted env passes (an id or
    kwarg that imports by name, the kwargs' size, an env PPO can train, the resource budget):
    the spec is checked with each env parameter (and rollout.n_steps, for the budget) at each
    value the space can reach, and with every tuned kwarg at its largest at once. Nothing is
    built from kwargs that fail the size and name rules."""
    from ppo_platform.tuning.space import base_data, build_trial_spec, trial_data

    assert spec.tune is not None
    data = base_data(spec)
    sized = ("env", "rollout.n_steps")  # what the env and the rollout's memory depend on
    tuned = [p for p in spec.tune.space if p in sized or p.startswith("env.")]
    widest = {  # each tuned kwarg at its longest value (as JSON)
        path: max((v for _, v in _reachable(spec, path)), key=lambda v: len(repr(v)))
        for path in tuned
        if path.startswith("env.kwargs.")
    }
    try:
        refuse_oversized_kwargs(trial_data(data, widest)["env"]["kwargs"], source)
    except SpecError as error:
        first = error.issues[0]
        message = "refused: the space can sample " + first.message.removeprefix("refused: ")
        issue = replace(first, path="tune.space", value=sorted(widest), message=message)
        raise SpecError([issue], source) from None
    probes = [
        (
            path,
            bound,
            value,
            cast(ExperimentSpec, build_trial_spec(data, {path: value}, from_outside=True)),
        )
        for path in tuned
        for bound, value in _reachable(spec, path)
    ]
    # The name and size rules for every value first: no env is built from one that fails them.
    for check in (_refuse_named_or_oversized, check_env_remembered):
        for path, bound, value, probe in probes:
            try:
                check(probe, source)
            except SpecError as error:
                issues = [
                    replace(search_space_refusal(path, bound, value, issue), rule=issue.rule)
                    for issue in error.issues
                ]
                raise SpecError(issues, source) from None


def _refuse_named_or_oversized(spec: ExperimentSpec, source: str) -> None:
    refuse_oversized_kwargs(spec.env.kwargs, source)
    refuse_importing_env(spec.env.id, spec.env.kwargs, source)


def total_env_steps(spec: ExperimentSpec, source: str) -> int:
    """Env steps of every run the spec starts, counted in whole rollouts (what really trains);
    sweeps and studies are checked in full, every run's rollout within its budget."""
    kind = kind_of(spec)
    refuse_rollout_over_budget(spec, source)
    if kind == "sweep":
        from ppo_platform.sweeps.batches import refuse_uncompilable
        from ppo_platform.sweeps.expand import expand_sweep

        members = expand_sweep(spec, source, from_outside=True)
        refuse_uncompilable(members, source)
        specs = [m.spec for m in members]
        gym_specs = [member for member in specs if isinstance(member, ExperimentSpec)]
        for member in gym_specs:  # a grid may change the env's kwargs or n_envs
            refuse_rollout_over_budget(member, source)
            check_env_remembered(member, source)
        return sum(trained_steps(member) for member in gym_specs)
    issue = uncompilable_issue(spec)
    if issue is not None:  # a run, a batch or a study's base spec
        raise SpecError([issue], source)
    if kind == "tune":
        from ppo_platform.tuning import check_space

        check_space(spec, from_outside=True)
        steps = study_env_steps(spec)
        check_sampled_envs(spec, source)
        return steps
    return trained_steps(spec) * len(spec.budget.seeds or [None])  # a batch: every seed


def prepare_submission(text: str, max_env_steps: int, source: str = "request") -> Submission:
    """Validate `text` in full and describe the job to queue; SpecError names every issue."""
    data, positions = parse_spec_text(text, source)
    if is_lm_data(data):
        return prepare_lm_submission(text, max_env_steps, source)
    spec = spec_from_data(data, positions, source)
    steps = total_env_steps(spec, source)
    if steps > max_env_steps:
        issue = SpecIssue(
            "budget.total_timesteps",
            f"the experiment would train {steps} env steps in all, over the limit "
            f"max_env_steps = {max_env_steps} per experiment.",
            spec.budget.total_timesteps,
            fix="lower the budget (or the number of runs or trials), or ask for a higher "
            "PPO_PLATFORM_MAX_ENV_STEPS.",
            rule="max_env_steps",
        )
        raise SpecError([issue], source)
    return Submission(
        kind=kind_of(spec),
        name=spec.name,
        spec=spec.resolved(),
        spec_hash=spec.spec_hash(),
        total_timesteps=steps,
    )


def is_lm_text(text: str, source: str) -> bool:
    """Whether the spec text asks for `algorithm: ppo_lm` (parsed with the spec's YAML rules)."""
    check_spec_size(len(text.encode("utf-8", "surrogatepass")), source)
    data, _ = parse_yaml(text, source)
    return is_lm_data(data)


def prepare_lm_submission(text: str, max_env_steps: int, source: str) -> Submission:
    """An LM spec from outside: every path inside the LM folder; its generated tokens (each
    one an action) count against max_env_steps."""
    spec = load_any_spec_text(text, source, from_outside=True)
    assert isinstance(spec, LMExperimentSpec)
    tokens, runs = lm_tokens_bound(spec), 1
    if spec.tune is not None:  # counted as a gymnasium study is (study_runs)
        from ppo_platform.tuning import check_space

        check_space(spec, from_outside=True)  # every path and value, before anything is queued
        runs = study_runs(spec)
    tokens *= runs
    kind = kind_of(spec)
    if kind == "sweep":  # every member validated, its own tokens counted
        from ppo_platform.sweeps.expand import expand_sweep

        members = [m.spec for m in expand_sweep(spec, source, from_outside=True)]
        tokens = sum(lm_tokens_bound(m) for m in members if isinstance(m, LMExperimentSpec))
    if tokens > max_env_steps:
        issue = SpecIssue(
            "budget.updates",
            f"the {kind if kind != 'tune' else 'study'} could generate {tokens} tokens "
            f"(updates x prompts_per_update x max_new_tokens{_lm_runs_words(kind)}), over the "
            f"limit max_env_steps = {max_env_steps} per experiment.",
            spec.budget.updates,
            fix="lower budget.updates, lm.prompts_per_update or lm.generation.max_new_tokens "
            "(or tune.n_trials and the seeds, or a sweep's variants and seeds).",
            rule="max_env_steps",
        )
        raise SpecError([issue], source)
    return Submission(
        kind=kind,
        name=spec.name,
        spec=spec.resolved(),
        spec_hash=spec.spec_hash(),
        total_timesteps=tokens,
    )


def _lm_runs_words(kind: str) -> str:
    """How an LM experiment's token bound multiplies out, for its refusal's message."""
    if kind == "tune":
        return " x seeds x trials, at the space's highest values"
    return ", summed over the sweep's runs" if kind == "sweep" else ""


LM_SIZE_PATHS = ("budget.updates", "lm.prompts_per_update", "lm.generation.max_new_tokens")


def lm_tokens_bound(spec: LMExperimentSpec) -> int:
    """Tokens one run can generate: updates x prompts_per_update x max_new_tokens, each at
    the largest value the tune space can sample (the spec's own when not tuned)."""
    from ppo_platform.tuning.space import sampled_range

    tune = spec.tune is not None
    sizes = (
        ("budget.updates", spec.budget.updates),
        ("lm.prompts_per_update", spec.lm.prompts_per_update),
        ("lm.generation.max_new_tokens", spec.lm.generation.max_new_tokens),
    )
    tokens = 1
    for path, current in sizes:
        tokens *= sampled_range(spec, path, current)[1] if tune else current
    return tokens


SERVICE_FIELDS = {"--model-dir": "model_dir", "--prompts": "prompts", "--budget": "budget"}


def plan_lm_for_service(
    model_dir: str, prompts: str, budget: int, overrides: list[str], use_case: str = "rlhf"
) -> Any:
    """The rlhf (PPO) or reasoning (GRPO) plan of a request, by the CLI's planner
    (`plan_lm_experiment`): `model_dir` and `prompts` relative to the operator's LM
    folder (as an LM spec's paths from outside); the planned spec names them so, and can be
    submitted as it is. Issues name the request's fields."""
    from ppo_platform.planner import plan_lm_experiment
    from ppo_platform.settings import get_settings
    from ppo_platform.spec.lm_inputs import InputProblem, resolve

    root = get_settings().lm_folder
    try:
        folder = resolve(model_dir, "model_dir", root, from_outside=True)
        prompt_file = resolve(prompts, "prompts", root, from_outside=True)
        return plan_lm_experiment(
            folder, prompt_file, budget, overrides, (model_dir, prompts), use_case
        )
    except InputProblem as problem:
        raise SpecError([problem.issue], "request") from None
    except SpecError as error:
        # The planner names the files it read by their full paths: the request named them
        # relative to the LM folder, and so does the answer.
        inside = f"{root.resolve()}/"
        issues = [
            dataclasses.replace(
                issue,
                path=SERVICE_FIELDS.get(issue.path, issue.path),
                message=issue.message.replace(inside, "").replace(f"{root}/", ""),
                value=issue.value.replace(inside, "")
                if isinstance(issue.value, str)
                else issue.value,
            )
            for issue in error.issues
        ]
        raise SpecError(issues, "request") from None


def plan_for_service(env_id: str, budget: int, use_case: str, overrides: list[str]) -> Any:
    """The planner's Plan for a request: the env id must be registered (nothing imported)."""
    from ppo_platform.planner import plan_experiment

    check_env_id(env_id, "request")
    return plan_experiment(env_id, budget, use_case, overrides)

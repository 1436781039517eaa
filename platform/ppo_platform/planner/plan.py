"""`plan_experiment`: env id + budget -> a validated spec and the skill-ppo-trainer markdown.

A library function (the CLI and the REST API are shells around it): it prints nothing, writes
nothing (`write_plan` does), and imports gymnasium only, never torch, SB3 or MLflow.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppo_platform.errors import BadInputError, SpecError, SpecIssue
from ppo_platform.planner.derive import Derivation, check_budget, check_budget_covers, derive
from ppo_platform.planner.env_info import PLAN_SOURCE, EnvInfo, check_env_id_text, inspect_env
from ppo_platform.planner.lm_plan import LMPlan
from ppo_platform.planner.render import num, render_markdown
from ppo_platform.planner.use_cases import RLHF, USE_CASES, UseCase, resolve_use_case
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import dump_spec, parse_override, set_dotted, validate_data
from ppo_platform.spec.names import refuse_overwrite
from ppo_platform.spec.rules import PPO_ALGORITHMS

SPEC_FILE = "spec.yaml"
MARKDOWN_FILE = "skill-ppo-trainer.md"
# The plan is derived for one environment: changing it afterwards would make every reason wrong.
FIXED_BY_PLAN = {
    "env.id": "plan for that environment instead: --env ID",
    "env": "plan for that environment instead: --env ID",
}


@dataclass(frozen=True)
class Plan:
    """A planned experiment: the spec, the markdown, and the reason for every planned field."""

    spec: ExperimentSpec
    markdown: str
    reasons: dict[str, str]
    env: EnvInfo
    use_case: str
    budget: int
    updates: int
    warnings: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()  # the caller's --set assignments, applied after planning

    def spec_yaml(self) -> str:
        """The spec as YAML, headed by comments that say where it came from."""
        u = self.spec
        header = [
            f"# Planned by `ppo-platform plan --env {self.env.env_id} --budget {self.budget} "
            f"--use-case {self.use_case}"
            # one comment line, whatever the caller typed: a newline would end the comment
            + "".join(f" --set {' '.join(assignment.split())}" for assignment in self.overrides)
            + "`.",
            f"# N={u.env.n_envs} x T={u.rollout.n_steps}, K={u.update.epochs}, minibatch "
            f"{u.update.minibatch_size}, gamma {num(u.advantage.gamma)}, lambda "
            f"{num(u.advantage.gae_lambda)}: the reason for each value is in {MARKDOWN_FILE}.",
        ]
        return "\n".join(header) + "\n" + dump_spec(self.spec)

    def summary(self) -> str:
        """One line for a person: the planned numbers."""
        s = self.spec
        return (
            f"planned {self.env.env_id} ({self.use_case}) for {self.budget:,} env steps: "
            f"N={s.env.n_envs} x T={s.rollout.n_steps} ({self.updates} updates), "
            f"K={s.update.epochs}, minibatch {s.update.minibatch_size}, LR "
            f"{num(s.update.learning_rate.start)} {s.update.learning_rate.schedule}, "
            f"eps {num(s.surrogate.clip_epsilon.start)}, gamma {num(s.advantage.gamma)}, "
            f"lambda {num(s.advantage.gae_lambda)}"
        )


def _slug(env_id: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", env_id.split("/")[-1].lower()).strip("-.") or "env"


def _check_use_case_name(use_case: str) -> None:
    if use_case in (RLHF.name, "reasoning"):  # a language model: planned from a model folder
        raise SpecError(
            [
                SpecIssue(
                    "use_case",
                    "plans PPO or GRPO on a language model, not on a gymnasium env.",
                    use_case,
                    fix="pass the model folder and prompts instead of --env: ppo-platform plan "
                    f"--use-case {use_case} --model-dir DIR --prompts FILE.jsonl --budget "
                    "RESPONSES.",
                )
            ],
            PLAN_SOURCE,
        )
    if use_case not in USE_CASES:
        raise SpecError(
            [
                SpecIssue(
                    "use_case",
                    "is not a known use case.",
                    use_case,
                    fix=f"use one of {', '.join(USE_CASES)}.",
                )
            ],
            PLAN_SOURCE,
        )


def _base_data(info: EnvInfo, case: UseCase, budget: int) -> dict[str, Any]:
    tags = {"planned_by": "ppo-platform plan", "use_case": case.name, "plan_budget": str(budget)}
    return {
        "name": f"{_slug(info.env_id)}-ppo",
        "env": {"id": info.env_id},
        "algorithm": "ppo",
        "tracking": {"tags": tags},
    }


def _apply_overrides(
    data: dict[str, Any],
    reasons: dict[str, str],
    derivation: Derivation,
    overrides: tuple[str, ...],
) -> None:
    for assignment in overrides:
        path, value = parse_override(assignment)
        if path in FIXED_BY_PLAN:
            raise SpecError(
                [
                    SpecIssue(
                        path,
                        "cannot be overridden: the plan is derived for this environment.",
                        value,
                        fix=FIXED_BY_PLAN[path],
                    )
                ],
                "--set",
            )
        if path == "algorithm" and value not in PPO_ALGORITHMS:
            raise SpecError(
                [
                    SpecIssue(
                        path,
                        "the planner plans PPO runs only.",
                        value,
                        fix=f"use one of {', '.join(sorted(PPO_ALGORITHMS))}, or "
                        "write an a2c spec by hand.",
                    )
                ],
                "--set",
            )
        set_dotted(data, path, value, source="--set")
        # `update.learning_rate.start` overrides the planned `update.learning_rate`.
        planned = next(
            (c for c in derivation.choices if path == c.path or path.startswith(c.path + ".")), None
        )
        was = f"; the planner's own choice was {planned.value}" if planned else ""
        reasons[planned.path if planned else path] = (
            f"set by the caller with `--set {assignment}`{was}"
        )


def plan_experiment(
    env_id: str, budget: int, use_case: str = "auto", overrides: Iterable[str] = ()
) -> Plan:
    """Plan a PPO run for `env_id` within `budget` env steps.

    Raises SpecError for an unknown env id (with close matches), a non-positive, absurd or
    too-small budget, an unknown or unfitting use case, and overrides the refusal rules refuse.
    """
    overrides = tuple(overrides)
    _check_use_case_name(use_case)
    budget = check_budget(budget)
    check_env_id_text(env_id)
    info = inspect_env(env_id)
    case, case_reason = resolve_use_case(info, use_case)
    check_budget_covers(budget, case)
    derivation = derive(info, budget, case)

    data = _base_data(info, case, budget)
    reasons: dict[str, str] = {}
    for choice in derivation.choices:
        set_dotted(data, choice.path, copy.deepcopy(choice.value))  # overrides must not edit it
        reasons[choice.path] = choice.reason
    _apply_overrides(data, reasons, derivation, overrides)
    # The same validation and refusal rules as `validate` and `run`, so the messages match.
    spec = validate_data(data, source="--set" if overrides else "plan")
    updates = math.ceil(spec.budget.total_timesteps / spec.batch_size)  # overrides included
    markdown = render_markdown(
        spec, info, case, case_reason, reasons, updates, derivation.warnings, overrides
    )
    return Plan(
        spec=spec,
        markdown=markdown,
        reasons=reasons,
        env=info,
        use_case=case.name,
        budget=budget,
        updates=updates,
        warnings=derivation.warnings,
        overrides=overrides,
    )


def write_plan(
    plan: Plan | LMPlan, out_dir: str | Path = "outputs", force: bool = False
) -> tuple[Path, Path]:
    """Write `spec.yaml` and `skill-ppo-trainer.md` into `out_dir` (created if missing).

    BadInputError (path `out`) naming the folder if it cannot be written; ConflictError if
    either file exists already and `force` is off.
    """
    folder = Path(out_dir)
    refuse_overwrite([folder / SPEC_FILE, folder / MARKDOWN_FILE], "--out", force)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        spec_path, markdown_path = folder / SPEC_FILE, folder / MARKDOWN_FILE
        spec_path.write_text(plan.spec_yaml(), encoding="utf-8")
        markdown_path.write_text(plan.markdown, encoding="utf-8")
    except OSError as exc:
        raise BadInputError(
            [
                SpecIssue(
                    "out",
                    f"cannot write the plan: {exc.strerror}.",
                    str(folder),
                    fix="pass a writable folder with --out.",
                )
            ],
            PLAN_SOURCE,
        ) from None
    return spec_path, markdown_path

"""The skill-ppo-trainer planner: an env id and a budget in, a runnable spec and a plan out.

    plan = plan_experiment("CartPole-v1", 100_000)
    write_plan(plan, "outputs")   # outputs/spec.yaml + outputs/skill-ppo-trainer.md

Imports gymnasium only (never torch, SB3 or MLflow), so planning takes a fraction of a second.
"""

from ppo_platform.planner.derive import MAX_BUDGET, minimum_budget
from ppo_platform.planner.env_info import EnvInfo, inspect_env
from ppo_platform.planner.lm_plan import LMPlan, plan_lm_experiment
from ppo_platform.planner.plan import MARKDOWN_FILE, SPEC_FILE, Plan, plan_experiment, write_plan
from ppo_platform.planner.use_cases import LM_USE_CASES, PLAN_USE_CASES, USE_CASES, UseCaseName

__all__ = [
    "LM_USE_CASES",
    "MARKDOWN_FILE",
    "MAX_BUDGET",
    "PLAN_USE_CASES",
    "SPEC_FILE",
    "USE_CASES",
    "EnvInfo",
    "LMPlan",
    "Plan",
    "UseCaseName",
    "inspect_env",
    "minimum_budget",
    "plan_experiment",
    "plan_lm_experiment",
    "write_plan",
]

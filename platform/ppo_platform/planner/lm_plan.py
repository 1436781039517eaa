"""The `rlhf` use case: a model folder + a prompt file + a budget -> an `algorithm: ppo_lm` spec.

`plan_lm_experiment` reads the model's config.json and the prompt file (never loads the model:
no torch, no transformers), sizes the run from them, validates the spec with the same rules as
`validate` and `run`, and says why for every planned value. The spec trains as it is:
`ppo-platform run spec.yaml`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.planner.env_info import PLAN_SOURCE
from ppo_platform.planner.lm_reasoning import reasoning_choices
from ppo_platform.planner.render import num
from ppo_platform.planner.use_cases import LM_USE_CASES
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.lm_inputs import InputProblem, check_model_folder
from ppo_platform.spec.lm_loader import validate_lm_data
from ppo_platform.spec.loader import dump_spec, parse_override, set_dotted

MARKDOWN_TITLE = "# PPO on a language model (rlhf): the plan"
REASONING_TITLE = "# GRPO on a language model (reasoning): the plan"
MAX_RESPONSES = 100_000_000
SMALL_MODEL_PARAMETERS = 50_000_000  # below: the tiny-model learning rate
LARGE_MODEL_PARAMETERS = (
    1_000_000_000  # above: the RLHF column's lower end (docs/guides/planning.md)
)


@dataclass(frozen=True)
class LMPlan:
    """A planned LM run: the spec, the markdown, the reason for every planned field."""

    spec: LMExperimentSpec
    markdown: str
    reasons: dict[str, str]
    model_dir: Path
    prompts: Path
    budget: int
    updates: int
    overrides: tuple[str, ...] = ()
    use_case: str = "rlhf"
    warnings: tuple[str, ...] = ()

    def spec_yaml(self) -> str:
        sets = "".join(f" --set {' '.join(a.split())}" for a in self.overrides)
        return (
            f"# Planned by `ppo-platform plan --use-case {self.use_case} --model-dir "
            f"{self.model_dir} --prompts {self.prompts} --budget {self.budget}{sets}`.\n"
            f"# {self.method()} on the language model itself (algorithm: ppo_lm); the reason "
            "for each value "
            "is in skill-ppo-trainer.md.\n" + dump_spec(self.spec)
        )

    def method(self) -> str:
        return "GRPO" if self.spec.advantage.estimator == "grpo" else "PPO"

    def summary(self) -> str:
        s = self.spec
        group = f" x {s.advantage.group_size}" if s.advantage.group_size > 1 else ""
        return (
            f"planned {self.method()} on the language model {self.model_dir} ({self.use_case}) "
            f"for {self.budget:,} responses: {s.lm.prompts_per_update}{group} per update "
            f"({self.updates} updates), "
            f"K={s.update.epochs}, minibatch {s.update.minibatch_size}, LR "
            f"{num(s.update.learning_rate.start)}, eps {num(s.surrogate.clip_epsilon.start)}, "
            f"KL beta {num(s.lm.kl.beta)}"
            + (f" toward {num(s.lm.kl.target)} nats" if s.lm.kl.target else " (fixed)")
        )


def _issue(path: str, message: str, value: object, fix: str) -> SpecError:
    return SpecError([SpecIssue(path, message, value, fix=fix)], PLAN_SOURCE)


def _read_prompts(path: Path) -> list[dict[str, Any]]:
    """The prompt file's objects (`validate` checks every line again, with line numbers)."""
    if not path.is_file():
        raise _issue("--prompts", f"is not a file ({path}).", str(path), "give a JSONL file.")
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            row = None
        if isinstance(row, dict):
            rows.append(row)
    if not rows or not all(isinstance(r.get("prompt"), str) for r in rows):
        raise _issue(
            "--prompts",
            "is not a JSONL file of objects with a string `prompt` on every line.",
            str(path),
            'write one {"prompt": ..., "answer": ...} object per line.',
        )
    return rows


def _learning_rate(weight_bytes: int) -> tuple[float, str]:
    parameters = weight_bytes // 4
    if parameters < SMALL_MODEL_PARAMETERS:
        return 1e-4, (
            f"about {parameters:,} parameters (float32 weights): a small model moves little "
            "per step at the RLHF column's 1e-6 to 1e-5, which is for models of billions; 1e-4 is "
            "what the tiny demo model learns with (benchmarks/results/lm_demo_accuracy.md)"
        )
    if parameters < LARGE_MODEL_PARAMETERS:
        return (
            1e-5,
            f"about {parameters:,} parameters: the RLHF column's upper end "
            "(docs/guides/planning.md)",
        )
    return (
        1e-6,
        f"about {parameters:,} parameters: the RLHF column's lower end (docs/guides/planning.md)",
    )


def _reasons(longest: int, per_update: int, lr_reason: str, budget: int) -> dict[str, str]:
    """Why each planned value (the markdown's table)."""
    return {
        "lm.model.policy": "the model folder given with --model-dir (local files only)",
        "lm.prompts": "the prompt file given with --prompts",
        "lm.rewards": "every prompt has a reference answer: 1 when the response equals it",
        "lm.generation": f"the longest answer is {longest} characters: "
        "room for it and the end-of-text token; temperature 1 samples the policy itself, so "
        "behavior and old-training log-probs agree (docs/guides/language-models.md)",
        "lm.reduction": "every response token is one PPO sample (token_mean, the default)",
        "lm.kl": "a per-token KL penalty to the frozen reference (docs/guides/planning.md), "
        "beta fixed at 0.05, as the demo's: the policy starts at its reference (KL 0), so an "
        "adaptive target would halve beta every update until the KL reached half the target, "
        "which it may never do, down to beta's floor and the penalty off "
        "(docs/guides/language-models.md, KL control). Set lm.kl.target to adapt beta once a "
        "run has shown the KL it reaches",
        "lm.prompts_per_update": f"{per_update} responses per rollout (a tenth of the budget, "
        "at least 8 and at most 64, at most the prompts there are)",
        "update.epochs": "the RLHF column: K 1 to 4 (docs/guides/planning.md)",
        "update.minibatch_size": "four minibatches per epoch",
        "update.learning_rate": lr_reason,
        "update.max_grad_norm": "gradient clipping at 0.5, as the demo",
        "surrogate.clip_epsilon": "the PPO paper's 0.2",
        "surrogate.clip_value": "the value head's step clipped like the policy's",
        "advantage.gamma": "the RLHF column: gamma 1.0, no discount inside a response",
        "advantage.gae_lambda": "lambda 1: the score on the last token reaches every token",
        "budget.updates": f"{budget:,} responses / {per_update} per update",
    }


def _choices(model_dir: Path, prompts: Path, budget: int) -> tuple[dict[str, Any], dict[str, str]]:
    try:
        facts = check_model_folder(str(model_dir), "--model-dir", model_dir.parent, False)
    except InputProblem as problem:
        raise SpecError([problem.issue], PLAN_SOURCE) from None
    rows = _read_prompts(prompts)
    answers = [r["answer"] for r in rows if isinstance(r.get("answer"), str)]
    longest_prompt = max(len(r["prompt"]) for r in rows) + 1  # characters bound the tokens
    room = (facts.positions or 1024) - longest_prompt
    if room < 2:
        raise _issue(
            "--prompts",
            f"the longest prompt (up to {longest_prompt} tokens) leaves no room for a response "
            f"in the model's {facts.positions} positions.",
            str(prompts),
            "shorten the prompts or use a model with more positions.",
        )
    if len(answers) != len(rows):
        raise _issue(
            "--prompts",
            "has lines without a string `answer`: the planned reward is exact_answer.",
            str(prompts),
            "give every line its reference answer, or write the rewards of an LM spec by hand "
            "(docs/guides/language-models.md).",
        )
    new_tokens = min(room - 1, max(len(a) for a in answers) + 2, 256)
    per_update = max(1, min(64, len(rows), max(min(8, budget), budget // 10)))
    lr, lr_reason = _learning_rate(facts.weight_bytes)
    data = {
        "lm.model.policy": str(model_dir),
        "lm.prompts": {"path": str(prompts)},
        "lm.rewards": [{"name": "exact_answer"}],
        "lm.generation": {"max_new_tokens": new_tokens, "temperature": 1.0, "top_p": 1.0},
        "lm.reduction": "token_mean",
        "lm.kl": {"estimator": "k1", "beta": 0.05, "target": None},
        "lm.prompts_per_update": per_update,
        "update.epochs": 4,
        "update.minibatch_size": max(1, per_update // 4),
        "update.learning_rate": lr,
        "update.max_grad_norm": 0.5,
        "surrogate.clip_epsilon": 0.2,
        "surrogate.clip_value": 0.2,
        "advantage.gamma": 1.0,
        "advantage.gae_lambda": 1.0,
        "budget.updates": max(1, math.ceil(budget / per_update)),
    }
    longest = max(len(a) for a in answers)
    return data, _reasons(longest, per_update, lr_reason, budget)


def _markdown(spec: LMExperimentSpec, reasons: dict[str, str], updates: int) -> str:
    intro = (
        f"PPO on the language model `{spec.lm.model.policy}`: the action is the next token, the "
        "reward scores the whole response on its last token, and r_total = score - beta * "
        f"KL(pi || pi_ref) per token keeps the policy near its reference. {updates} updates."
    )
    if spec.advantage.estimator == "grpo":
        intro = (
            f"GRPO on the language model `{spec.lm.model.policy}`: {spec.advantage.group_size} "
            "responses to each prompt, each response's advantage its score against the group's "
            "mean and std (no critic), and beta * KL(pi || pi_ref) (k3) a term of the loss. "
            f"{updates} updates."
        )
    lines = [
        MARKDOWN_TITLE if spec.advantage.estimator != "grpo" else REASONING_TITLE,
        "",
        intro,
        "",
        "| field | value | why |",
        "|---|---|---|",
    ]
    resolved = spec.resolved()
    for path, reason in reasons.items():
        value: Any = resolved
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        lines.append(f"| `{path}` | `{json.dumps(value)}` | {reason} |")
    lines += [
        "",
        "Watch `lm/reward_mean` (it should rise), `lm/kl_ref` (finite"
        + (f", near or under {num(spec.lm.kl.target)}" if spec.lm.kl.target else "")
        + "), `train/approx_kl` and `train/clip_fraction`; the "
        "guide docs/guides/language-models.md explains each.",
    ]
    return "\n".join(lines) + "\n"


def _check_use_case(use_case: str) -> None:
    if use_case not in LM_USE_CASES:
        raise _issue(
            "use_case",
            "is not a plan of a language model.",
            use_case,
            "use rlhf (PPO) or reasoning (GRPO).",
        )


def _check_budget(budget: int) -> None:
    if not 1 <= budget <= MAX_RESPONSES:
        raise _issue(
            "budget",
            "must be a number of responses to sample, from 1 to 100,000,000.",
            budget,
            "pass --budget, for example 9600 (150 updates of 64 responses).",
        )


def plan_lm_experiment(
    model_dir: str | Path,
    prompts: str | Path,
    budget: int,
    overrides: Iterable[str] = (),
    spec_paths: tuple[str, str] | None = None,
    use_case: str = "rlhf",
) -> LMPlan:
    """Plan PPO (`use_case` rlhf) or GRPO (reasoning) on the model in `model_dir` over the
    JSONL `prompts`, for `budget` responses.
    `spec_paths` (the REST API): the (policy, prompts) paths the spec names instead, relative
    to the LM folder and checked as a spec from outside is.

    Raises SpecError naming --model-dir, --prompts, --budget or the --set assignment at fault.
    """
    overrides = tuple(overrides)
    _check_use_case(use_case)
    _check_budget(budget)
    folder, prompt_file = Path(model_dir).expanduser().resolve(), Path(prompts).expanduser()
    choices, reasons = _choices(folder, prompt_file.resolve(), budget)
    if use_case == "reasoning":
        choices, reasons = reasoning_choices(choices, reasons, budget)
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in folder.name.lower())
    data: dict[str, Any] = {
        "name": f"{name.strip('-.') or 'model'}-{'grpo' if use_case == 'reasoning' else 'ppo'}-lm",
        "algorithm": "ppo_lm",
        "diagnostics": {"on_alert": "warn"},
        "tracking": {"tags": {"planned_by": "ppo-platform plan", "use_case": use_case}},
    }
    if spec_paths is not None:
        choices["lm.model.policy"], choices["lm.prompts"] = spec_paths[0], {"path": spec_paths[1]}
    for path, value in choices.items():
        set_dotted(data, path, value)
    for assignment in overrides:
        path, value = parse_override(assignment)
        set_dotted(data, path, value, source="--set")
        reasons[path] = f"set by the caller with `--set {assignment}`"
    source = "--set" if overrides else PLAN_SOURCE
    spec = validate_lm_data(data, source=source, from_outside=spec_paths is not None)
    updates = spec.budget.updates
    # The service's plan names its inputs as the caller did (relative to the LM folder): the
    # server's folders are never in an answer.
    shown_dir, shown_prompts = (
        (Path(spec_paths[0]), Path(spec_paths[1]))
        if spec_paths is not None
        else (folder, prompt_file.resolve())
    )
    return LMPlan(
        spec=spec,
        markdown=_markdown(spec, reasons, updates),
        reasons=reasons,
        model_dir=shown_dir,
        prompts=shown_prompts,
        budget=budget,
        updates=updates,
        overrides=overrides,
        use_case=use_case,
    )

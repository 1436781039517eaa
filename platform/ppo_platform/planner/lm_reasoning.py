"""The `reasoning` use case: GRPO on a language model whose prompts have verifiable answers.

The same inputs as `rlhf` (a model folder, a JSONL prompt file with an answer on every line, a
budget in responses), planned critic-free: each prompt gets a group of responses and a
response's advantage is its score against the group's mean and spread (DeepSeekMath's GRPO, the
user's lessons: "Reasoning LLMs: GRPO, a PPO variant without critic"), so no value head is
built, trained or saved, and the KL to the reference is a term of the loss (k3, GRPO's).
"""

from __future__ import annotations

import math
from typing import Any

# Responses per prompt: enough for a group mean and spread to mean something, few enough that
# a small budget still makes several updates (GRPO's papers use 8 to 64).
GROUP_SIZE = 8
# DeepSeekMath's GRPO: beta 0.04 on the k3 estimator, in the loss.
KL_BETA = 0.04


def reasoning_choices(
    data: dict[str, Any], reasons: dict[str, str], budget: int
) -> tuple[dict[str, Any], dict[str, str]]:
    """The rlhf plan's choices (`data`, `reasons`) turned into GRPO's."""
    responses_wanted = data["lm.prompts_per_update"]  # the rlhf plan's responses per rollout
    group = GROUP_SIZE if budget >= 2 * GROUP_SIZE else 2 if budget < 8 else 4
    prompts = max(1, responses_wanted // group)
    responses = prompts * group
    data = {
        k: v for k, v in data.items() if k not in ("surrogate.clip_value", "advantage.gae_lambda")
    }
    reasons = {k: v for k, v in reasons.items() if k in data}
    data.update(
        {
            "advantage.estimator": "grpo",
            "advantage.group_size": group,
            "lm.prompts_per_update": prompts,
            "lm.kl": {"estimator": "k3", "beta": KL_BETA, "target": None, "placement": "loss"},
            "update.epochs": 2,
            "update.minibatch_size": max(1, responses // 4),
            "budget.updates": max(1, math.ceil(budget / responses)),
        }
    )
    reasons.update(
        {
            "advantage.estimator": "GRPO: a response's advantage is its score against the mean "
            "and std of its group; no critic, so no value head is built, trained or saved",
            "advantage.group_size": f"{group} responses per prompt: a group mean and spread "
            f"from {group} scores (GRPO uses 8 to 64; fewer on a budget of {budget:,})",
            "lm.prompts_per_update": f"{prompts} prompt(s) x {group} responses = {responses} "
            "responses per rollout (the rlhf plan's rollout size, in whole groups)",
            "lm.kl": f"GRPO's KL to the reference: the k3 estimator, in the loss (not the "
            f"reward), beta fixed at {KL_BETA} (DeepSeekMath)",
            "update.epochs": "2 passes over each rollout: GRPO's papers take 1 or 2 (the RLHF "
            "column's K 1 to 4)",
            "update.minibatch_size": "four minibatches per epoch",
            "budget.updates": f"{budget:,} responses / {responses} per update",
        }
    )
    return data, reasons

"""A language-model run speaks LM: its progress lines and summary count updates and score a
reward (with the KL to the reference), no `+-` where there is no spread; and a spec that sets
both programmatic rewards and a reward model is refused instead of dropping the rewards."""

from __future__ import annotations

import pytest

from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.rules import refusals
from ppo_platform.training.progress import PlainReporter, ProgressEvent, describe
from ppo_platform.training.result import RunResult


def test_the_lm_progress_line_says_updates_reward_and_kl_to_reference(
    capsys: pytest.CaptureFixture[str],
) -> None:
    update = ProgressEvent(
        "update", 7, 40, fps=2.5, ep_rew_mean=0.25, approx_kl=0.003, kl_ref=1.75,
        clip_fraction=0.12, language_model=True,
    )  # fmt: skip
    line = describe(update)
    assert line == "update 7/40 2.50 updates/s reward 0.250 KL to reference 1.7500 clip 0.120"
    assert "step" not in line and "return" not in line
    PlainReporter(every_seconds=0)(ProgressEvent("eval", 8, 40, eval_mean=0.5, language_model=True))
    assert capsys.readouterr().out == "eval  update 8: mean reward 0.500\n"


def test_the_lm_summary_counts_updates_and_shows_no_spread_it_does_not_have() -> None:
    lm = RunResult("f" * 32, "completed", 40, 0.625, None, 0, 12.0, language_model=True)
    assert lm.summary().startswith(
        f"completed: run {'f' * 32}, 40 updates in 12.0 s, final eval reward 0.62, 0 alert(s)"
    )
    assert "+-" not in lm.summary() and "env steps" not in lm.summary()
    gym = RunResult("e" * 32, "completed", 4096, 180.0, 12.5, 1, 9.0)
    assert "4096 env steps in 9.0 s, final eval return 180.00 +- 12.50" in gym.summary()


def test_rewards_beside_a_reward_model_are_refused_not_dropped() -> None:
    spec = LMExperimentSpec.model_validate(
        {
            "name": "lm-both",
            "algorithm": "ppo_lm",
            "lm": {
                "model": {"policy": "chat/policy", "reward_model": "chat/judge"},
                "prompts": {"path": "chat/prompts.jsonl"},
                "rewards": [{"name": "contains", "params": {"text": "thanks"}}],
                "reduction": "sequence_mean",
            },
        }
    )
    [issue] = [i for i in refusals(spec) if i.path == "lm.rewards"]
    assert issue.value == ["contains"]
    assert "lm.model.reward_model = 'chat/judge'" in issue.message
    assert issue.fix is not None and "remove lm.rewards" in issue.fix

"""benchmarks.throughput.lm_grpo_step: the target's verdict from the samples' medians and
ranges (GRPO's update against PPO's less its value head)."""

from __future__ import annotations

from benchmarks.harness import summary
from benchmarks.throughput.lm_grpo_step import VARIANTS, _verdict


def stats(grpo: list[float], ppo: list[float]) -> dict:
    return {"grpo": {"update_cpu_s": summary(grpo)}, "ppo": {"update_cpu_s": summary(ppo)}}


def test_a_grpo_step_below_ppo_less_the_value_head_holds_and_apart_says_so():
    verdict = _verdict(stats([0.20, 0.21, 0.22], [0.27, 0.28, 0.30]), summary([0.01, 0.01]))
    assert verdict["holds"] == "holds" and verdict["bound"] == 0.28 - 0.01
    assert verdict["note"] == "The ranges do not overlap."


def test_a_grpo_step_above_the_bound_does_not_hold_and_overlap_is_said():
    verdict = _verdict(stats([0.27, 0.28, 0.29], [0.26, 0.28, 0.30]), summary([0.01]))
    assert verdict["holds"] == "does not hold"
    assert "cannot tell the two apart" in verdict["note"]


def test_both_variants_sample_the_same_responses_per_update():
    ppo, grpo = (dict(v.split("=") for v in VARIANTS[name]) for name in ("ppo", "grpo"))
    responses = {
        name: int(v["lm.prompts_per_update"]) * int(v["advantage.group_size"])
        for name, v in (("ppo", ppo), ("grpo", grpo))
    }
    assert responses == {"ppo": 128, "grpo": 128}

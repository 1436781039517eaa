"""The doctor corpus's held-out protocol: a fixed split by env family, declared before anything
is fitted, and the cases grown so each cause is planted on two families at least.

The doctor's thresholds and rules were chosen on the tuning part (classic control: CartPole-v1
and Acrobot-v1, the corpus of issue #35); its rates are reported on the held-out part only
(continuous classic control, MuJoCo, a user's plain Python env, the LM task, Atari, gymnasium's
toy text), never the reverse.
"""

from __future__ import annotations

from benchmarks.learning.doctor_corpus_cases import BASES, FAULTS, GOOD, LM_GOOD_SETS, Fault, Good

TUNING_FAMILIES = ("classic_control",)
HELD_OUT_FAMILIES = ("classic_continuous", "mujoco", "user_python", "lm", "atari", "toy_text")
PARTS = {"tuning": TUNING_FAMILIES, "heldout": HELD_OUT_FAMILIES}

HUGE_LR = ("update.learning_rate.start=3.0", "update.learning_rate.schedule=constant")
TINY_LR = ("update.learning_rate.start=1.0e-6",)
NO_CRITIC = ("surrogate.value_coef=0.0",)
TINY_STD = ("policy.log_std_init=-4.0",)
SHORT_ROLLOUT = ("rollout.n_steps=4", "update.minibatch_size=16")


def family_of(case: Fault | Good) -> str:
    """The env family a case runs on: its base's, or (a known-good spec of its own) its own."""
    base = getattr(case, "base", None)
    return BASES[base].family if base else case.family  # type: ignore[union-attr]


def part_of(case: Fault | Good) -> str:
    """`tuning` or `heldout`: which side of the declared split a case's env family is on."""
    family = family_of(case)
    for part, families in PARTS.items():
        if family in families:
            return part
    raise ValueError(f"env family {family!r} is in neither part of the split")


def _env(kind: str, base: str) -> str:
    return f"Faulty{kind}-{base}"


GRPO = ("advantage.estimator=grpo", "advantage.group_size=4")
# The two LM causes added after the corpus first ran, each planted by two faults a user meets.
LM_LENGTH_AND_GROUP_FAULTS = (
    Fault(
        "length_bonus",
        "lm",
        "length_penalty with its weight's sign flipped (-1 x per_token 1.0): every token pays "
        "as much as a right answer; 120 updates (the drift shows late)",
        "lm_length_at_limit",
        (
            *LM_GOOD_SETS,
            "lm.rewards=[{name: exact_answer}, "
            "{name: length_penalty, weight: -1.0, params: {per_token: 1.0}}]",
        ),
        budget=120,
    ),
    Fault(
        "max_new_tokens_short",
        "lm",
        "max_new_tokens 1, below the two-digit answers' length: every response is cut",
        "lm_length_at_limit",
        (*LM_GOOD_SETS, "lm.generation.max_new_tokens=1"),
    ),
    Fault(
        "grpo_near_greedy",
        "lm",
        "GRPO groups of 4 sampled at temperature 0.05: a group's responses are one response",
        "lm_group_no_signal",
        (*LM_GOOD_SETS, *GRPO, "lm.generation.temperature=0.05"),
    ),
    Fault(
        "grpo_format_never_met",
        "lm",
        "GRPO groups of 4 rewarded only for a format the SFT model never writes "
        "(regex ^<answer>): every score is 0",
        "lm_group_no_signal",
        (*LM_GOOD_SETS, *GRPO, "lm.rewards=[{name: regex, params: {pattern: '^<answer>'}}]"),
    ),
)

GROWN_FAULTS = (
    # The first-update collapse (issue #47): a learning rate so large that one update
    # collapses the policy's spread; on every gym family.
    *(
        Fault(
            "lr_huge",
            b,
            "learning rate 3.0 constant (first-update collapse)",
            "step_too_large",
            HUGE_LR,
        )
        for b in ("cartpole", "acrobot", "pendulum", "halfcheetah", "reach", "reach_discrete")
    ),
    *(
        Fault("lr_1000x_low", b, "learning rate 1e-6", "step_too_small", TINY_LR)
        for b in ("reach", "reach_discrete")
    ),
    Fault(
        "obs_scaled_1e4",
        "reach",
        "observations x 1e4, not normalized",
        "observation_scale",
        env=_env("ObsScale", "Reach-v0"),
    ),
    Fault(
        "rewards_scaled_1e4",
        "reach",
        "rewards x 1e4, not normalized",
        "reward_scale",
        env=_env("RewardScale", "Reach-v0"),
    ),
    *(
        Fault(
            "nan_observations",
            b,
            "observation 1 is NaN from each env's step 200",
            "observations_not_finite",
            env=_env("NanObs", e),
            fixable=False,
            onset=200,
        )
        for b, e in (("reach", "Reach-v0"), ("pendulum", "Pendulum-v1"))
    ),
    *(
        Fault(
            "nan_rewards",
            b,
            "the reward is NaN from each env's step 200",
            "rewards_not_finite",
            env=_env("NanReward", e),
            fixable=False,
            onset=200,
        )
        for b, e in (
            ("cartpole", "CartPole-v1"),
            ("reach", "Reach-v0"),
            ("pendulum", "Pendulum-v1"),
        )
    ),
    *(
        Fault(
            "no_critic",
            b,
            "value_coef 0: the critic is never trained",
            "critic_not_learning",
            NO_CRITIC,
        )
        for b in ("cartpole", "pendulum", "reach_discrete")
    ),
    *(
        Fault(
            "narrow_actions",
            b,
            "the action Box is 0.01 x the env's: most samples clipped",
            "action_saturation",
            env=_env("NarrowActions", e),
            fixable=False,
        )
        for b, e in (("reach", "Reach-v0"), ("pendulum", "Pendulum-v1"))
    ),
    *(
        Fault(
            "tiny_std",
            b,
            "policy.log_std_init -4 (std 0.018): no exploration",
            "std_collapse",
            TINY_STD,
        )
        for b in ("reach", "pendulum")
    ),
    *(
        Fault(
            "zero_reward",
            b,
            "every reward is 0",
            "no_reward_signal",
            env=_env("ZeroReward", e),
            fixable=False,
        )
        for b, e in (
            ("cartpole", "CartPole-v1"),
            ("reach_discrete", "ReachDiscrete-v0"),
            ("pendulum", "Pendulum-v1"),
        )
    ),
    Fault(
        "gamma_too_short",
        "pendulum",
        "gamma 0.5 (a 2-step horizon), 200-step episodes",
        "horizon_too_short",
        ("advantage.gamma=0.5",),
    ),
    *(
        Fault(
            "rollout_too_short",
            b,
            "4 steps x 4 envs: 16 transitions per rollout",
            "rollout_too_short",
            SHORT_ROLLOUT,
        )
        for b in ("reach", "pendulum")
    ),
    Fault(
        "step_raises",
        "reach",
        "step() raises PlantedEnvError at each env's step 200",
        "env_crash",
        env=_env("StepRaises", "Reach-v0"),
        fixable=False,
        onset=200,
    ),
    Fault(
        "kl_runaway",
        "lm",
        "fixed beta 0.001 with a 30x learning rate",
        "lm_kl_runaway",
        ("lm.kl.target=null", "lm.kl.beta=0.001", "update.learning_rate.start=3.0e-3"),
    ),
    *LM_LENGTH_AND_GROUP_FAULTS,
)
# Known-good configs of the held-out families at budgets where they learn (seeds: configs).
GROWN_GOOD = (
    *(Good(f"reach seed {s}", base="reach", seed=s) for s in range(1, 6)),
    *(Good(f"reach_discrete seed {s}", base="reach_discrete", seed=s) for s in range(1, 6)),
    *(Good(f"lm seed {s}", base="lm", seed=s) for s in (1, 2)),
    # the new LM causes' known-good: a GRPO run (its groups' spread is logged) and the demo at
    # the length fault's 120 updates
    *(Good(f"lm grpo seed {s}", base="lm", seed=s, sets=GRPO) for s in (0, 1)),
    Good("lm 120 updates", base="lm", budget=120),
    # a user's env whose optimum is deterministic: found while trying to plant entropy_collapse,
    # added after the doctor's answer on this spec was seen (a false alarm kept, not hidden)
    *(
        Good(
            f"lock seed {s}",
            what="benchmarks/learning/corpus_specs/lock.yaml",
            budget=20_000,
            quick=20_000,
            family="user_python",
            seed=s,
        )
        for s in (0, 1)
    ),
    # a family the doctor had never seen, with a deterministic optimum (gymnasium's FrozenLake
    # not slippery, registered reward_threshold 0.70): added, and run, before the rule read a
    # solved level, so its rows are blind to that change
    *(
        Good(
            f"frozenlake seed {s}",
            what="benchmarks/learning/corpus_specs/frozenlake.yaml",
            budget=20_000,
            quick=20_000,
            family="toy_text",
            seed=s,
        )
        for s in (0, 1)
    ),
    *(
        Good(
            f"frozenlake8x8 seed {s}",
            what="benchmarks/learning/corpus_specs/frozenlake8x8.yaml",
            budget=40_000,
            quick=40_000,
            family="toy_text",
            seed=s,
        )
        for s in (0, 1)
    ),
    # a second seed of the held-out continuous and MuJoCo known-good configs (each had seed 0
    # only): added, and run, after the seed-1 rows of their faults, before their answer was seen
    *(Good(f"{base} seed 1", base=base, seed=1) for base in ("pendulum", "halfcheetah", "hopper")),
    Good(
        "zoo Hopper-v4 seed 1",
        source="zoo",
        what="Hopper-v4",
        budget=20_000,
        quick=10_000,
        family="mujoco",
        seed=1,
    ),
    Good(
        "specs/pendulum.yaml seed 1",
        what="specs/pendulum.yaml",
        budget=30_000,
        quick=15_000,
        family="classic_continuous",
        seed=1,
    ),
)
# What was measured while the LM length and group cases were chosen (the page shows it): the
# cases were fixed after these probes, so they are disclosed, not hidden.
PLANTING_NOTES = (
    "The toy-text known-good runs (FrozenLake-v1 4x4 and FrozenLake8x8-v1, not slippery) were "
    "each probed once (seed 0, outside the corpus) to find a budget at which PPO solves them "
    "(4x4: 20k steps, named entropy_collapse; 8x8: 40k steps, named nothing); their corpus rows "
    "were then run blind to the solved-level rule (before it was written) and again after it.",
    "Each of the four LM length and group cases was probed (seed 0, outside the corpus, the "
    "doctor's answer seen) before the corpus run: these rows are not blind to the case "
    "choice; no threshold or rule was changed after the probes.",
    "lm/length_bonus was probed before its size and budget were fixed (runs outside the corpus, "
    "seed 0; from 60 updates seeds 0 and 1): per_token 0.1 and 0.5 at 5 updates and 0.5 at 30 "
    "left the mean "
    "length at 2.9-3.5 of 4 (no drift to the limit); per_token 1.0 and 2.0 at 60 updates drifted "
    "to 3.6-4.0 with 3-34% of responses still ending (EOS), and the doctor named nothing (1.0) "
    "or `lm_kl_runaway` (2.0, KL to the reference ~9 nats); per_token 1.0 at 120 updates is the "
    "case.",
    "lm/max_new_tokens_short: `lm_length_at_limit` fires only on a drift (the first update "
    "below 95% of the limit); responses at the limit from the first update are left out by "
    "design, and the LM rules have no rule for a reward that is 0 on every response (GAE runs "
    "log no group spread; `no_reward_signal` reads episode returns, which LM runs do not log). "
    "Not changed: the tuning part has no LM family to justify a rule on.",
    "LM recovery is not judged (the page's rule needs a known-good return above a random "
    "policy's; the LM demo reports a final eval reward, and at 5 updates its known-good run does "
    "not move from the SFT start). The group faults' patched re-runs (advantage.group_size 16) "
    "were read from the kept runs: groups scoring alike 0.69-0.94 (near-greedy; the fault's "
    "0.72-0.94; a known-good GRPO run's 0.25-0.53) and 1.0 (format never met, as the fault): "
    "the patch restores no signal on either.",
)
ALL_FAULTS = (*FAULTS, *GROWN_FAULTS)
ALL_GOOD = (*GOOD, *GROWN_GOOD)

# Causes of the vocabulary no case plants yet, and why (the case-list test holds them to this).
NOT_PLANTED = {
    "entropy_collapse": "no cheap fault collapses a discrete policy's entropy early without a "
    "step too large (which the doctor names instead, as it should). Tried: a negative entropy "
    "coefficient (the spec refuses it), a combination lock with a decoy (Lock-v0, 5-7 stages, "
    "decoy 0.1-0.3, entropy_coef 0-0.05, 2 seeds each): PPO opened every lock, so there was no "
    "fault to plant; every one of those solved runs was named entropy_collapse before the rule "
    "read the env's solved level (see lock seed 0 and 1 in the known-good set)",
    "lm_reward_hacking": "needs a reward whose terms can be exploited while a held-out reward "
    "falls; the demo task's reward is exact arithmetic",
    "lm_length_collapse": "needs a reward term that pays for ending early; the demo has none",
}
# The LM causes can only be planted on the one LM family: twice there (cases x seeds).
ONE_FAMILY_CAUSES = (
    "lm_kl_penalty_inert",
    "lm_kl_runaway",
    "lm_length_at_limit",
    "lm_group_no_signal",
)

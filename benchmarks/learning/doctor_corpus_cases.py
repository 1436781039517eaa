"""The doctor corpus's runs: known-good base specs, the faults planted in them, and the
known-good set (benchmarks/learning/doctor_corpus.py; docs/guides/diagnostics.md, "How often is
the doctor right?"). Env faults are the ids benchmarks/learning/faulty_envs.py registers."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.learning.faulty_envs import NAN_INDEX, ONSET_STEPS

# A user's plain Python env (faulty_envs.Reach): learns in 20k steps (eval ~-3; random ~-38).
REACH_SPEC = "benchmarks/learning/corpus_specs/reach.yaml"


@dataclass(frozen=True)
class Base:
    """A known-good spec: a file, `ppo-platform plan --env ENV --budget N`'s spec, or
    `ppo-platform import-zoo tests/fixtures/zoo_ppo.yml ENV`'s; `budget` env steps (LM: updates),
    `quick` in --quick; `random` the return of a random policy (recovery is judged between it and
    the known-good return)."""

    name: str
    source: str  # "file" | "plan" | "zoo"
    what: str  # the file, or the env id to plan or import
    budget: int
    quick: int
    random: float | None
    sets: tuple[str, ...] = ()
    n_envs: int = 1
    family: str = "classic_control"  # the env family the held-out split is declared by


BASES = {
    b.name: b
    for b in (
        Base("cartpole", "file", "specs/cartpole.yaml", 20_000, 10_000, 22.0, n_envs=8),
        Base("acrobot", "plan", "Acrobot-v1", 30_000, 15_000, -500.0, n_envs=8),
        Base(
            "pendulum",
            "plan",
            "Pendulum-v1",
            30_000,
            15_000,
            -1230.0,
            n_envs=4,
            family="classic_continuous",
        ),
        Base("halfcheetah", "plan", "HalfCheetah-v5", 20_000, 10_000, -280.0, family="mujoco"),
        Base("hopper", "plan", "Hopper-v5", 20_000, 10_000, 18.0, family="mujoco"),
        Base("reach", "file", REACH_SPEC, 20_000, 20_000, -38.0, n_envs=4, family="user_python"),
        Base(
            "reach_discrete",
            "file",
            "benchmarks/learning/corpus_specs/reach_discrete.yaml",
            20_000,
            20_000,
            -38.0,
            n_envs=4,
            family="user_python",
        ),
        Base(
            "lm",
            "file",
            "specs/lm_arithmetic.yaml",
            8,
            5,
            None,
            ("lm.prompts_per_update=32", "evaluation.every_updates=0", "evaluation.max_prompts=50"),
            family="lm",
        ),
    )
}


@dataclass(frozen=True)
class Fault:
    """One documented fault planted in a base: `sets` (spec fields) and/or `env` (a faulty env
    id); `cause` the doctor should name first; `fixable`: a spec patch can fix it; `onset` the
    env step (of one env) the fault starts at; `budget` its own (LM: updates) where the fault
    shows only late (0: the base's)."""

    name: str
    base: str
    fault: str
    cause: str
    sets: tuple[str, ...] = ()
    env: str | None = None
    fixable: bool = True
    onset: int = 0
    budget: int = 0


FAULTS = (
    Fault(
        "lr_30x_high",
        "cartpole",
        "learning rate 0.03 constant (30x the zoo's 1e-3)",
        "step_too_large",
        ("update.learning_rate.start=0.03", "update.learning_rate.schedule=constant"),
    ),
    Fault(
        "lr_1000x_low",
        "cartpole",
        "learning rate 1e-6 (1000x below the zoo's 1e-3)",
        "step_too_small",
        ("update.learning_rate.start=1.0e-6",),
    ),
    Fault(
        "gamma_too_short",
        "acrobot",
        "gamma 0.5 (a 2-step horizon) for episodes of up to 500 steps that pay only at the goal",
        "horizon_too_short",
        ("advantage.gamma=0.5",),
    ),
    Fault(
        "k30_large_step",
        "acrobot",
        "K 30 epochs with a 10x learning rate (6e-3 constant)",
        "step_too_large",
        (
            "update.epochs=30",
            "update.learning_rate.start=0.006",
            "update.learning_rate.schedule=constant",
        ),
    ),
    Fault(
        "obs_scaled_1e4",
        "pendulum",
        "observations x 1e4, not normalized",
        "observation_scale",
        env="FaultyObsScale-Pendulum-v1",
    ),
    Fault(
        "rewards_scaled_1e4",
        "pendulum",
        "rewards x 1e4, not normalized",
        "reward_scale",
        env="FaultyRewardScale-Pendulum-v1",
    ),
    Fault(
        "nan_observations",
        "cartpole",
        f"observation {NAN_INDEX} is NaN from each env's step {ONSET_STEPS}",
        "observations_not_finite",
        env="FaultyNanObs-CartPole-v1",
        fixable=False,
        onset=ONSET_STEPS,
    ),
    Fault(
        "step_raises",
        "acrobot",
        f"step() raises PlantedEnvError at each env's step {ONSET_STEPS}",
        "env_crash",
        env="FaultyStepRaises-Acrobot-v1",
        fixable=False,
        onset=ONSET_STEPS,
    ),
    Fault(
        "lr_30x_high",
        "halfcheetah",
        "learning rate 1.5e-3 constant (30x the planner's 5e-5)",
        "step_too_large",
        ("update.learning_rate.start=0.0015",),
    ),
    Fault(
        "step_raises",
        "hopper",
        f"step() raises PlantedEnvError at step {ONSET_STEPS}",
        "env_crash",
        env="FaultyStepRaises-Hopper-v5",
        fixable=False,
        onset=ONSET_STEPS,
    ),
    Fault(
        "kl_penalty_inert",
        "lm",
        "adaptive beta (rule lesson) with a target of 2.0 nats the KL never reaches, from beta "
        "4e-6 (the shipped demo's 0.05 halves to this floor by update ~14; started there to fit "
        "a few updates)",
        "lm_kl_penalty_inert",
        ("lm.kl.beta=4.0e-6", "lm.kl.target=2.0", "lm.kl.rule=lesson"),
    ),
)


@dataclass(frozen=True)
class Good:
    """A known-good config: a base (its budget unless `budget`; `sets` on top of the base's) or
    a spec of its own, `budget` env steps."""

    name: str
    base: str | None = None
    source: str = "file"
    what: str = ""
    budget: int = 0
    quick: int = 0
    sets: tuple[str, ...] = field(default=())
    family: str = "classic_control"  # a spec of its own's env family (with a base: the base's)
    seed: int = 0


GOOD = (
    *(Good(f"{name} (the faults' base)", base=name) for name in BASES),
    Good("zoo CartPole-v1", source="zoo", what="CartPole-v1", budget=20_000, quick=10_000),
    Good("zoo Acrobot-v1", source="zoo", what="Acrobot-v1", budget=30_000, quick=15_000),
    Good("plan CartPole-v1", source="plan", what="CartPole-v1", budget=20_000, quick=10_000),
    Good(
        "specs/pendulum.yaml",
        what="specs/pendulum.yaml",
        budget=30_000,
        quick=15_000,
        family="classic_continuous",
    ),
    Good(
        "specs/gridworld.yaml",
        what="specs/gridworld.yaml",
        budget=20_000,
        quick=10_000,
        family="user_python",
    ),
    Good(
        "zoo Hopper-v4",
        source="zoo",
        what="Hopper-v4",
        budget=20_000,
        quick=10_000,
        family="mujoco",
    ),
    Good(
        "ALE Breakout (specs/breakout_cleanrl.yaml)",
        what="specs/breakout_cleanrl.yaml",
        budget=20_480,
        quick=10_240,
        family="atari",
    ),
)
# The LM demo's known-good run holds beta fixed at the demo's 0.05 (no adaptive target).
LM_GOOD_SETS = ("lm.kl.target=null",)

# Faults tried and dropped: at the corpus's budget the run learns anyway, so there is nothing
# for the doctor to find (it named nothing on them). Shown on the results page.
DROPPED = (
    "cartpole/gamma_too_short (gamma 0.5): learned anyway, eval return 127 at 10k steps and 302 "
    "at 20k (seed 0, still rising); the doctor named nothing",
    "acrobot/rollout_too_short (2 steps x 8 envs, 16 transitions): learned anyway, episode "
    "return -88 at 21k steps (seed 0); the doctor named nothing",
)

"""The planner's use cases (the table in docs/guides/planning.md) and how an env picks one.

Each use case fixes the choices the use-case table fixes (policy family, N envs, fixed rollout
lengths, LR family, entropy, normalization); everything that depends on the env or the budget
is derived in `derive.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, get_args

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.planner.env_info import PLAN_SOURCE, EnvInfo

USE_CASES = ("auto", "classic-control", "continuous-control", "atari", "rlhf")
# Every use case `ppo-platform plan` and `POST /v1/plans` take: the env plans above and the
# plans of a language model (a model folder and its prompts): PPO (rlhf) and GRPO (reasoning).
UseCaseName = Literal["auto", "classic-control", "continuous-control", "atari", "rlhf", "reasoning"]
PLAN_USE_CASES: tuple[str, ...] = get_args(UseCaseName)
LM_USE_CASES = ("rlhf", "reasoning")


@dataclass(frozen=True)
class UseCase:
    """Fixed defaults of one use case; the budget and env fill in the rest."""

    name: str
    title: str
    n_envs: int
    min_steps: int  # T never goes below this: GAE needs a few steps per env
    max_steps: int  # T never goes above this (atari: exactly 128)
    target_updates: int  # batch N x T is sized so the budget buys about this many updates
    max_batch: int
    cover_episodes: bool  # prefer T >= the episode horizon when the budget allows it
    lr_cap: float  # linear-scaling rule from 3e-4 at minibatch 64, capped here
    lr_schedule: str
    clip_epsilon: float
    clip_schedule: str
    entropy_coef: float
    value_coef: float
    gae_lambda: float | None  # None: derived from T (short rollouts get a shorter GAE span)
    gamma: float | None  # None: derived from the episode horizon
    net_arch: tuple[int, ...]
    activation: str
    normalize_reward: bool | None  # None: as the observations (continuous control)
    normalize_obs: bool | None  # None: derived from the observation bounds
    source: str  # where the defaults come from, for the plan's reasons
    normalize_reason: str = ""  # why normalization is on, when the use case fixes it
    n_envs_reason: str = ""  # why N, when it is not simply the source's value
    use_sde: bool = False  # gSDE exploration (Gaussian policies only)
    lr_start: float | None = None  # None: the linear scaling rule from the minibatch
    lr_reason: str = ""  # why lr_start, when the use case fixes it
    rollout_reason: str = ""  # why T, when the use case fixes it (min_steps == max_steps)
    policy_reason: str = ""  # why the layers, activation and initialization, when not SB3's
    log_std_init: float = 0.0  # Gaussian policies: the initial log std of the action noise
    ortho_init: bool = True
    kl_healthy_max: float | None = None  # None: the monitor's default (0.02)
    kl_healthy_reason: str = ""
    kl_alert: float | None = None  # None: the monitor's default (0.1)
    kl_alert_reason: str = ""


CLASSIC = UseCase(
    name="classic-control",
    title="classic control (discrete actions)",
    n_envs=8,
    min_steps=16,
    max_steps=2048,
    target_updates=400,
    max_batch=4096,
    cover_episodes=False,
    lr_cap=1e-3,
    lr_schedule="linear",
    clip_epsilon=0.2,
    clip_schedule="linear",
    entropy_coef=0.0,
    value_coef=0.5,
    gae_lambda=None,
    gamma=None,
    net_arch=(64, 64),
    activation="tanh",
    normalize_reward=False,
    normalize_obs=None,
    source="rl-baselines3-zoo's tuned classic-control values (CartPole-v1: 8 x 32, K 20, "
    "minibatch 256, LR 1e-3 linear, epsilon 0.2 linear)",
)
CONTINUOUS = UseCase(
    name="continuous-control",
    title="continuous control (Gaussian policy)",
    n_envs=4,
    min_steps=64,
    max_steps=2048,
    target_updates=100,
    max_batch=8192,
    cover_episodes=True,
    lr_cap=1e-3,
    lr_schedule="linear",
    clip_epsilon=0.2,
    clip_schedule="constant",
    entropy_coef=0.0,
    value_coef=0.5,
    gae_lambda=0.95,
    gamma=None,
    net_arch=(64, 64),
    activation="tanh",
    normalize_reward=None,
    normalize_obs=None,
    source="the use-case table (MuJoCo / robotics: Gaussian policy, GAE 0.95; "
    "docs/guides/planning.md)",
    n_envs_reason="a few envs, each with a long rollout that holds whole episodes "
    "(rl-baselines3-zoo's Pendulum setting)",
    normalize_reason="normalization is close to required in continuous control, where "
    "observation features and rewards come in very different units (docs/guides/planning.md)",
    use_sde=True,
    lr_start=1e-3,
)
# The tuned MuJoCo entries of rl-baselines3-zoo (ppo.yml: HalfCheetah-v4, Hopper-v4, Walker2d-v4,
# Humanoid-v4) all run 1 env x 512 steps, ReLU [256, 256] with log std -2 and no orthogonal init,
# normalized observations and rewards, a constant LR of 2e-5 to 1e-4 and K 5-20 (minibatch
# 32-256). Their medians (minibatch 64, K 10, clip 0.2, GAE 0.95) agree with CleanRL's MuJoCo
# defaults (minibatch 64, K 10, clip 0.2, GAE 0.95); see benchmarks/results/sample_efficiency.md.
SIMULATOR = replace(
    CONTINUOUS,
    title="continuous control of a physics simulator (MuJoCo-like, unbounded state)",
    n_envs=1,
    min_steps=512,
    max_steps=512,
    target_updates=0,
    max_batch=512,
    cover_episodes=False,
    lr_cap=5e-5,
    lr_schedule="constant",
    net_arch=(256, 256),
    activation="relu",
    normalize_reward=True,
    normalize_obs=True,
    use_sde=False,
    source="rl-baselines3-zoo's tuned MuJoCo entries (HalfCheetah, Hopper, Walker2d, Humanoid)",
    n_envs_reason="rl-baselines3-zoo's tuned MuJoCo entries all use 1 env: a simulator step "
    "is cheap next to the update, and one long stream keeps whole 1,000-step episodes together",
    normalize_reason="a physics simulator's state is unbounded and its features come in very "
    "different units (positions, velocities, contact forces), and so do the rewards; every tuned "
    "MuJoCo entry of rl-baselines3-zoo and CleanRL normalizes both",
    lr_start=5e-5,
    lr_reason="constant, as every tuned MuJoCo entry of rl-baselines3-zoo (2e-5 to 1e-4 for a "
    "ReLU [256, 256] net: HalfCheetah 2e-5, Walker2d 5e-5, Hopper 1e-4); 5e-5 is their middle. "
    "At 1e-4 with K = 10 the post-update KL on HalfCheetah-v5 ran 0.08-0.14 (spikes to 1.2), "
    "above the alert level of 0.1 (benchmarks/results/sample_efficiency.md)",
    rollout_reason="rl-baselines3-zoo's tuned MuJoCo entries all collect 512 steps per update "
    "(about half an episode: GAE bootstraps at the cut), so a 1e5 budget buys ~200 updates",
    policy_reason="rl-baselines3-zoo's tuned MuJoCo entries: separate ReLU [256, 256] actor and "
    "critic, log std -2 (action noise std 0.14, so early actions are not random flailing) and "
    "no orthogonal init; CleanRL's tanh [64, 64] with std 1 reaches a quarter of their "
    "HalfCheetah score at 1e6 steps (1442 vs 5819)",
    log_std_init=-2.0,
    ortho_init=False,
    kl_healthy_max=0.07,
    kl_healthy_reason="K = 10 full passes over 512 steps move the policy further than one "
    "minibatch step: on HalfCheetah-v5 this plan's post-update KL ran 0.03-0.07 while its "
    "return climbed at every evaluation, and the zoo's tuned Hopper entry runs 0.02-0.09; at "
    "the default 0.02 every such update judged the clip fraction (0.3-0.46 at epsilon 0.2) and "
    "raised false critical drift alerts",
    kl_alert=0.15,
    kl_alert_reason="judged on this plan's six 1e6-step runs (HalfCheetah-v5 and Hopper-v5, "
    "seeds 0-2; benchmarks/learning/alert_thresholds.py): their post-update KL ran a median of "
    "0.04-0.075, and 859 of their updates were above 0.1 with no evaluation collapse after "
    "them (on HalfCheetah 132 of 1,954 updates on a run that ended at 6720). Above 0.15 an "
    "alert still came before 15 of the 19 collapses (18 at 0.1), with 159 such idle alerts "
    "instead of 859. At 0.1 a critical alert is routine here; at 0.15 it is rare and mostly "
    "comes before a collapse",
)
ATARI = UseCase(
    name="atari",
    title="Atari-like image observations (CNN policy)",
    n_envs=8,
    min_steps=128,
    max_steps=128,
    target_updates=0,
    max_batch=1024,
    cover_episodes=False,
    lr_cap=2.5e-4,
    lr_schedule="linear",
    clip_epsilon=0.1,
    clip_schedule="linear",
    entropy_coef=0.01,
    value_coef=0.5,
    gae_lambda=0.95,
    gamma=0.99,
    net_arch=(),
    activation="relu",
    normalize_reward=False,
    normalize_obs=False,
    source="the use-case table (Atari: categorical policy, 8 envs x 128-step rollouts; "
    "docs/guides/planning.md) and the PPO paper's Atari settings",
)
RLHF = UseCase(
    name="rlhf",
    title="RLHF for language models (plan only)",
    n_envs=8,
    min_steps=16,
    max_steps=2048,
    target_updates=400,
    max_batch=4096,
    cover_episodes=False,
    lr_cap=3e-6,
    lr_schedule="constant",
    clip_epsilon=0.2,
    clip_schedule="constant",
    entropy_coef=0.0,
    value_coef=0.5,
    gae_lambda=0.95,
    gamma=1.0,
    net_arch=(64, 64),
    activation="tanh",
    normalize_reward=False,
    normalize_obs=False,
    source="the RLHF column of the hyperparameter table (K 1-4, LR 1e-6 to 1e-5, gamma 1.0, "
    "entropy 0, a KL penalty to the reference model; docs/guides/planning.md)",
)
BY_NAME = {case.name: case for case in (CLASSIC, CONTINUOUS, ATARI, RLHF)}


def _issue(message: str, value: str, fix: str) -> SpecError:
    return SpecError([SpecIssue("use_case", message, value, fix=fix)], PLAN_SOURCE)


def _auto_use_case(info: EnvInfo) -> tuple[UseCase, str]:
    if info.observation_kind == "image":
        return ATARI, "the observations are images (3-D uint8), so the Atari-like plan applies"
    if info.action_kind == "continuous":
        return (
            CONTINUOUS,
            "the actions are continuous (a Box), so the plan uses a Gaussian policy",
        )
    return CLASSIC, "the observations are a small vector and the actions are discrete"


def _simulator_or(info: EnvInfo, case: UseCase, reason: str) -> tuple[UseCase, str]:
    """Continuous control of an unbounded vector state (a physics simulator): the MuJoCo rule."""
    unbounded = info.observation_kind == "vector" and info.smallest_finite_range is None
    if case is not CONTINUOUS or not unbounded:
        return case, reason
    return SIMULATOR, (
        f"{reason}; no observation feature has finite bounds (a physics simulator's state, as "
        "in MuJoCo), so the rollout, network and learning rate follow rl-baselines3-zoo's "
        "tuned MuJoCo entries"
    )


def _refuse_misfit(case: UseCase, info: EnvInfo, requested: str) -> None:
    """SpecError if the requested use case does not fit the env's spaces."""
    image = info.observation_kind == "image"
    continuous = info.action_kind == "continuous"
    if case is ATARI and not image:
        raise _issue(
            f"atari needs image observations; {info.env_id} observes "
            f"{info.observation_description}.",
            requested,
            "use --use-case auto (or classic-control / continuous-control).",
        )
    if case is CONTINUOUS and not continuous:
        raise _issue(
            f"continuous-control needs continuous (Box) actions; {info.env_id} has "
            f"{info.action_description}.",
            requested,
            "use --use-case auto or classic-control.",
        )
    if case is CONTINUOUS and image:
        raise _issue(
            "continuous-control plans an MLP on vector observations; "
            f"{info.env_id} observes images.",
            requested,
            "use --use-case atari.",
        )
    if case is CLASSIC and (continuous or image):
        what = "continuous actions" if continuous else "image observations"
        better = "continuous-control" if continuous else "atari"
        raise _issue(
            f"classic-control plans discrete actions on vector observations; "
            f"{info.env_id} has {what}.",
            requested,
            f"use --use-case {better} (or auto).",
        )


def resolve_use_case(info: EnvInfo, requested: str) -> tuple[UseCase, str]:
    """The use case to plan for, and why. SpecError if it is unknown or does not fit the env."""
    if requested not in USE_CASES:
        raise _issue("is not a known use case.", requested, f"use one of {', '.join(USE_CASES)}.")
    if requested == "auto":
        return _simulator_or(info, *_auto_use_case(info))
    case = BY_NAME[requested]
    _refuse_misfit(case, info, requested)
    if case is RLHF:
        return case, (
            "requested. The environment only stands in for the language-model "
            "task so that the written spec validates and runs"
        )
    return _simulator_or(info, case, f"requested ({case.title})")

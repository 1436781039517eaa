"""Render a plan as `skill-ppo-trainer.md`: the seed's front matter and five sections."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ppo_platform.planner.env_info import EnvInfo
from ppo_platform.planner.use_cases import RLHF, UseCase
from ppo_platform.spec.experiment import ExperimentSpec, Schedule
from ppo_platform.spec.rules import MAX_CLIP_EPSILON, MAX_EPOCHS

# Exactly the front matter of the lesson's "Ship it" template (docs/guides/planning.md).
FRONT_MATTER = """---
name: ppo-trainer
description: Produce a PPO training config and a diagnostic plan for a given environment.
version: 1.0.0
phase: 9
lesson: 8
tags: [rl, ppo, policy-gradient]
---
"""
SECTIONS = (
    "1. Rollout size",
    "2. Update schedule",
    "3. Surrogate params",
    "4. Advantage",
    "5. Diagnostics plan",
)
RLHF_NOTICE = (
    "**Plan only.** ppo-platform does not train language models. The numbers below "
    "are the RLHF plan for your language-model trainer; `spec.yaml` applies the same "
    "hyperparameters to {env} as a stand-in so that it validates and runs as a smoke "
    "test of the pipeline. It will not teach {env} much (the LR is tuned for "
    "fine-tuning a pretrained model), and it involves no language model."
)


def num(x: float) -> str:
    """1e-3 -> '1e-3', 2.5e-4 -> '2.5e-4', 0.98 -> '0.98', 20 -> '20'."""
    if x == 0 or abs(x) >= 0.01:
        return f"{x:g}"
    exponent = math.floor(math.log10(abs(x)))
    return f"{round(x / 10**exponent, 3):g}e{exponent}"


def _schedule(value: Schedule) -> str:
    if value.schedule == "linear":
        return f"{num(value.start)}, decayed linearly to {num(value.end)}"
    return f"{num(value.start)}, constant"


def _item(label: str, reason: str) -> str:
    return f"- **{label}**: {reason}." if reason else f"- **{label}**."


def _env_summary(info: EnvInfo) -> str:
    horizon = (
        f"episodes of at most {info.horizon} steps ({info.horizon_source})"
        if info.horizon
        else "no known episode limit"
    )
    solved = (
        f", solved at a return of {info.reward_threshold:g}"
        if info.reward_threshold is not None
        else ""
    )
    return (
        f"`{info.env_id}` (`{info.entry_point}`): observations {info.observation_description}, "
        f"actions {info.action_description}, {horizon}{solved}."
    )


def _policy(info: EnvInfo, spec: ExperimentSpec) -> str:
    family = "Gaussian (diagonal)" if info.action_kind == "continuous" else "categorical"
    layers = list(spec.policy.net_arch)
    if info.observation_kind == "image":
        body = "Nature CNN" + (f" then hidden layers {layers}" if layers else " features")
    else:
        body = f"MLP with hidden layers {layers}"
    init = ""
    if info.action_kind == "continuous":
        init += f", log std {num(spec.policy.log_std_init)} at the start"
    if not spec.policy.ortho_init:
        init += ", no orthogonal init"
    return (
        f"{family} policy, {body} ({spec.policy.activation}){init}; separate actor and critic "
        "networks"
    )


def _rollout(spec: ExperimentSpec, reasons: Mapping[str, str]) -> list[str]:
    norm = spec.env.normalize
    return [
        f"**N = {spec.env.n_envs} envs x T = {spec.rollout.n_steps} steps = "
        f"{spec.batch_size} transitions per update.**",
        "",
        _item(f"N = {spec.env.n_envs}", reasons["env.n_envs"]),
        _item(f"T = {spec.rollout.n_steps}", reasons["rollout.n_steps"]),
        _item(
            f"Observation normalization {'on' if norm.obs else 'off'}", reasons["env.normalize.obs"]
        ),
        _item(
            f"Reward normalization {'on' if norm.reward else 'off'}",
            reasons["env.normalize.reward"],
        ),
        _item(
            f"Exploration: {'gSDE' if spec.policy.use_sde else 'sampled actions'}",
            reasons["policy.use_sde"],
        ),
        *_env_preprocessing(spec, reasons),
    ]


def _env_preprocessing(spec: ExperimentSpec, reasons: Mapping[str, str]) -> list[str]:
    """The planned wrappers and env kwargs, when the plan sets any."""
    lines = []
    if spec.env.wrappers:
        names = ", ".join(w.name for w in spec.env.wrappers)
        lines.append(_item(f"Wrappers: {names}", reasons.get("env.wrappers", "")))
    if spec.env.kwargs:
        kwargs = ", ".join(f"{k}={v}" for k, v in spec.env.kwargs.items())
        lines.append(_item(f"Env arguments: {kwargs}", reasons.get("env.kwargs", "")))
    return lines


def _update(spec: ExperimentSpec, reasons: Mapping[str, str]) -> list[str]:
    u = spec.update
    return [
        _item(f"K = {u.epochs} epochs", reasons["update.epochs"]),
        _item(f"Minibatch size {u.minibatch_size}", reasons["update.minibatch_size"]),
        _item(f"Learning rate {_schedule(u.learning_rate)}", reasons["update.learning_rate"]),
        _item(f"Gradient-norm clip {num(u.max_grad_norm)}", reasons["update.max_grad_norm"]),
    ]


def _surrogate(spec: ExperimentSpec, reasons: Mapping[str, str]) -> list[str]:
    s = spec.surrogate
    return [
        "Loss: L = L_CLIP - c_v (V - V_target)^2 + c_e H(pi), with "
        "L_CLIP = E[min(r A, clip(r, 1-eps, 1+eps) A)] and r = exp(log pi - log pi_old).",
        "",
        _item(f"epsilon (clip) = {_schedule(s.clip_epsilon)}", reasons["surrogate.clip_epsilon"]),
        _item(f"c_v = {num(s.value_coef)}", reasons["surrogate.value_coef"]),
        _item(f"c_e = {num(s.entropy_coef)}", reasons["surrogate.entropy_coef"]),
        _item(
            f"Advantage normalization {'on' if s.normalize_advantage else 'off'}",
            reasons["surrogate.normalize_advantage"],
        ),
    ]


def _advantage(spec: ExperimentSpec, reasons: Mapping[str, str]) -> list[str]:
    a = spec.advantage
    return [
        f"**GAE(lambda) with gamma = {num(a.gamma)} and lambda = {num(a.gae_lambda)}**, "
        "computed once per rollout, then frozen for the K epochs.",
        "",
        _item(f"gamma = {num(a.gamma)}", reasons["advantage.gamma"]),
        _item(f"lambda = {num(a.gae_lambda)}", reasons["advantage.gae_lambda"]),
    ]


def _diagnostics_rules(spec: ExperimentSpec) -> list[str]:
    """One sentence per rule that decides when an alert is raised."""
    d = spec.diagnostics
    scale = "the RMS of the rollout's returns" if d.value_scale is None else num(d.value_scale)
    kl = (
        "the post-update KL (`train/approx_kl_post`: the rollout policy against the updated one "
        "over the whole rollout, one extra forward pass; unlike the per-minibatch KL it sees the "
        "last gradient step and is not 0 for K = 1)"
        if d.kl_source == "post_update"
        else "SB3's per-minibatch KL (`train/approx_kl`, each minibatch before its own step)"
    )
    return [
        f"- **Variance floor.** Explained variance is judged only when Var(returns) is at least "
        f"{num(d.return_variance_floor)} x value scale^2 (value scale: {scale}); below it (e.g. "
        "every episode reaches the time limit and the returns barely vary) the update is logged "
        "as not informative (`diagnostics/explained_variance_informative` = 0), never alerted.",
        f"- **KL source.** The KL alert and `surrogate.target_kl` read {kl}.",
        f"- **Re-arming.** An alert fires once per episode: a signal that leaves its alert state "
        f"and returns within {d.window} healthy updates is the same episode; the run's summary "
        "(and `alerts.json`) lists per signal the episodes, first and last env step, worst value "
        "and the advice once.",
    ]


def _diagnostics(spec: ExperimentSpec, reasons: Mapping[str, str]) -> list[str]:
    d = spec.diagnostics
    late = f"after {d.late_fraction:.0%} of the budget"
    kl_name = "post-update" if d.kl_source == "post_update" else "per minibatch"
    kl_too = f", with the KL above {num(d.kl_healthy_max)}" if d.clip_fraction_needs_kl else ""
    return [
        "Checked after every update and logged to MLflow (`train/approx_kl`, "
        "`train/approx_kl_post`, `train/clip_fraction`, `train/explained_variance`, "
        "`diagnostics/alerts_total`). "
        f"KL monitoring is {'on' if d.monitor_kl else 'OFF'} and clip-fraction monitoring is "
        f"{'on' if d.monitor_clip_fraction else 'OFF'}; the skill refuses a PPO run without them.",
        "",
        "| Signal | Healthy | Alert when | What to do |",
        "|---|---|---|---|",
        f"| approx KL, mean((r-1) - log r) ({kl_name}) | 0 to {num(d.kl_healthy_max)} "
        f"| above {num(d.kl_alert)} "
        "| the update left the trust region: lower K or the LR (or set `surrogate.target_kl`) |",
        "| clip fraction, mean(abs(r-1) > eps) | 0.1 to 0.3 "
        f"| below {num(d.clip_fraction_low)} for {d.window} updates (not once the LR or clip "
        "range has decayed below 10% of its peak) "
        "| clipping never triggers, updates are too timid: raise the LR or K |",
        f"| clip fraction | 0.1 to 0.3 | at or above {num(d.clip_fraction_high)}{kl_too} "
        "| updates are too aggressive: lower the LR or K |",
        f"| clip fraction **drift** | 0.1 to 0.3 | above {num(d.drift_clip_fraction)} for "
        f"{d.window} updates in a row{kl_too} | **drift**: the policy keeps pushing against "
        "the clip, update after update; lower K and the LR, or narrow epsilon |",
        f"| explained variance, 1 - Var(y-v)/Var(y) | rises toward 1 | at or below "
        f"{num(d.explained_variance_min)} {late} | the critic is not learning: check reward "
        "scale (normalize rewards), the value LR, gamma |",
        "| losses, ratio, gradient norm | finite | NaN or infinity | training stops with a clear "
        "error; resume from the last checkpoint with a lower LR |",
        "",
        *_diagnostics_rules(spec),
        "",
        _item(f"Sustained = {d.window} updates", reasons["diagnostics.window"]),
        _item(f"Healthy KL up to {num(d.kl_healthy_max)}", reasons["diagnostics.kl_healthy_max"]),
        _item(f"KL alert above {num(d.kl_alert)}", reasons["diagnostics.kl_alert"]),
        _item(f"On alert: {d.on_alert}", reasons["diagnostics.on_alert"]),
    ]


def _rlhf_section() -> list[str]:
    return [
        "## RLHF: the KL penalty to the reference model",
        "",
        "In RLHF the state is the prompt plus the tokens generated so far, the action is the next "
        "token, the policy is the language model and the reward model scores the whole response "
        "at its end. Read N as prompts per rollout and T as tokens per response.",
        "",
        "- **Reward.** r_total = r_RM(response) - beta * KL(pi || pi_ref), the KL taken per "
        "token against the frozen SFT (reference) model and summed over the response.",
        "- **beta.** Start around 0.02-0.1 and adapt it toward a target KL (for example 6 nats "
        "per response): double beta when the KL runs above twice the target, halve it below half. "
        "The policy starts at its reference (KL 0), so a target the KL never reaches halves beta "
        "to nothing: the `rlhf` plan holds beta fixed until a run has shown the KL it reaches.",
        "- **Why.** Optimizing the reward model alone finds its loopholes (reward hacking); the KL "
        "term keeps the policy near the SFT model. It is a second constraint, not a replacement "
        "for the clip: the clip limits one update's step, the KL penalty limits the total drift "
        "from the reference.",
        "- **Watch.** The KL to the reference (alongside the per-update approx KL and clip "
        "fraction above), the reward-model score and response length.",
    ]


def _intro(
    spec: ExperimentSpec, info: EnvInfo, case: UseCase, case_reason: str, updates: int
) -> list[str]:
    lines = [
        FRONT_MATTER,
        f"# PPO plan: {info.env_id}, {spec.budget.total_timesteps:,} env steps",
        "",
        "Given an environment and a training budget, this plan gives the rollout size, the update "
        "schedule, the surrogate parameters, the advantage estimator and a diagnostics plan, each "
        "with the reason behind it. `spec.yaml`, written next to this file, holds the same values "
        "and runs as is: `ppo-platform run spec.yaml`.",
        "",
    ]
    if case is RLHF:
        lines += [f"> {RLHF_NOTICE.format(env=info.env_id)}", ""]
    lines += [
        f"- **Environment.** {_env_summary(info)}",
        f"- **Use case.** {case.name}: {case_reason}.",
        f"- **Policy.** {_policy(info, spec)}.",
        f"- **Budget.** {spec.budget.total_timesteps:,} env steps: about {updates} updates of "
        f"{spec.batch_size} transitions (seed {spec.budget.seed}).",
        "",
    ]
    return lines


def _sections(spec: ExperimentSpec, reasons: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    bodies = (_rollout, _update, _surrogate, _advantage, _diagnostics)
    for title, body in zip(SECTIONS, bodies, strict=True):
        lines += [f"## {title}", "", *body(spec, reasons), ""]
    return lines


def _refusals(spec: ExperimentSpec) -> list[str]:
    return [
        "## Refusals",
        "",
        f"- K > {MAX_EPOCHS} or epsilon > {MAX_CLIP_EPSILON} is refused (unsafe trust region): "
        "the planner never emits them and refuses overrides that ask for them.",
        "- A PPO run without advantage normalization, or without KL or clip-fraction monitoring, "
        "is refused.",
        f"- Clip fraction sustained above {num(spec.diagnostics.drift_clip_fraction)} is flagged "
        "as drift (section 5).",
        "",
    ]


def _overrides(overrides: tuple[str, ...]) -> list[str]:
    if not overrides:
        return []
    return [
        "## Overrides",
        "",
        "Set by the caller after planning (their reasons above say so):",
        "",
        *[f"- `--set {assignment}`" for assignment in overrides],
        "",
    ]


def _warnings(warnings: tuple[str, ...]) -> list[str]:
    if not warnings:
        return []
    return ["## Warnings", "", *[f"- {warning}" for warning in warnings], ""]


RUN_IT = (
    "## Run it",
    "",
    "```",
    "ppo-platform validate spec.yaml",
    "ppo-platform run spec.yaml",
    "ppo-platform run spec.yaml --set budget.seed=1   # another seed",
    "```",
    "",
)


def render_markdown(
    spec: ExperimentSpec,
    info: EnvInfo,
    case: UseCase,
    case_reason: str,
    reasons: Mapping[str, str],
    updates: int,
    warnings: tuple[str, ...],
    overrides: tuple[str, ...],
) -> str:
    """The whole `skill-ppo-trainer.md` text."""
    lines = [
        *_intro(spec, info, case, case_reason, updates),
        *_sections(spec, reasons),
        *([*_rlhf_section(), ""] if case is RLHF else []),
        *_refusals(spec),
        *_overrides(overrides),
        *_warnings(warnings),
        *RUN_IT,
    ]
    return "\n".join(lines)

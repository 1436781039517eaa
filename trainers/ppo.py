"""PPO whose update we own: SB3 collects rollouts and computes GAE; the objective and the
diagnostics come from `ppo_platform.trainers.losses`.

The update keeps every per-minibatch statistic on the device and reads them back once, at the
end of the update (stock SB3 calls `.item()` five times per minibatch). Its pieces are stock
SB3's and torch's (`ppo_platform.trainers.stock`) or, with the fast paths on
(`ppo_platform.trainers.fast`, the default),
their bit-equal replacements. Either way, with the same seed and the same rollout it takes
exactly the gradient steps stock SB3 `PPO` takes.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.type_aliases import RolloutBufferSamples
from torch import Tensor
from torch.nn import functional as F

from .fast.algorithm import FastPathStrategy, saving_as_stock
from .fast.distributions import evaluate_actions
from .fast.manual import ManualLoss
from .fast.optimizer_step import MinibatchStep
from .fast.rollout_buffer import RolloutTensors
from .losses import (
    PolicyLossOutput,
    explained_variance,
    k3_kl,
    minibatch_diagnostics,
    ratio_quantiles,
    return_spread,
)
from .policy_objectives import ClipObjective, KLPenaltyObjective, PolicyObjective
from .reporting import StopCondition, UpdateHooks, UpdateListener
from .stock import BufferRollout, Observations, OptimizerStep

# A linear clip schedule reaches 0 at the end of training; the objective needs eps > 0.
# 1e-8 is below float32 resolution around 1, so clamp(r, 1 - eps, 1 + eps) is still exactly 1.
MIN_CLIP_EPSILON = 1e-8
# SB3's early-stopping convention: stop once a minibatch's KL exceeds 1.5 x target_kl.
TARGET_KL_FACTOR = 1.5
# Transitions per forward pass of the post-update KL: bounds its memory on large rollouts.
POST_KL_CHUNK = 8192

KLSource = Literal["minibatch", "post_update"]


def epoch_kl_name(epoch: int) -> str:
    """MLflow name of the mean approx KL of epoch `epoch` (1-based, zero-padded so it sorts)."""
    return f"train/approx_kl_epoch_{epoch:02d}"


def _rows(observations: Observations, start: int, stop: int) -> Observations:
    if isinstance(observations, dict):
        return {key: value[start:stop] for key, value in observations.items()}
    return observations[start:stop]


def rollout_statistics(buffer: RolloutBuffer, policy: torch.nn.Module) -> dict[str, Tensor]:
    """The update's rollout-level metrics as 0-d tensors: explained variance, the spread of the
    returns (std and RMS) and, for a Gaussian policy, its std."""
    returns = torch.from_numpy(buffer.returns.flatten())
    returns_std, returns_rms = return_spread(returns)
    named = {
        "train/explained_variance": explained_variance(
            torch.from_numpy(buffer.values.flatten()), returns
        ),
        "train/returns_std": returns_std,
        "train/returns_rms": returns_rms,
    }
    log_std = getattr(policy, "log_std", None)
    if log_std is not None:
        named["train/std"] = torch.exp(log_std.detach()).mean()
    return named


class _UpdateRecord:
    """Per-minibatch statistics of one update, kept as device tensors until `read()`."""

    def __init__(self) -> None:
        self.policy_losses: list[Tensor] = []
        self.value_losses: list[Tensor] = []
        self.entropy_losses: list[Tensor] = []
        self.grad_norms: list[Tensor] = []
        self.epochs: list[list[PolicyLossOutput]] = []  # diagnostics are read once, batched
        self.last_epoch_ratios: list[Tensor] = []
        self.last_loss: Tensor | None = None

    def start_epoch(self) -> None:
        self.epochs.append([])
        self.last_epoch_ratios = []  # quantiles describe the last epoch: the policy as it ends

    def add(
        self, out: PolicyLossOutput, value_loss: Tensor, entropy_loss: Tensor, loss: Tensor
    ) -> None:
        self.policy_losses.append(out.loss.detach())
        self.value_losses.append(value_loss.detach())
        self.entropy_losses.append(entropy_loss.detach())
        self.epochs[-1].append(out)
        self.last_epoch_ratios.append(out.ratio)
        self.last_loss = loss.detach()

    def read(self, extra: dict[str, Tensor]) -> dict[str, float]:
        """All statistics (and `extra` 0-d tensors) as floats, in one device-to-host transfer."""
        outputs = [out for epoch in self.epochs for out in epoch]
        kls, clip_fractions = minibatch_diagnostics(outputs)
        sizes = [len(epoch) for epoch in self.epochs if epoch]
        epoch_means = [kl.mean() for kl in kls.split(sizes)]
        named: dict[str, Tensor] = {
            "train/policy_gradient_loss": torch.stack(self.policy_losses).mean(),
            "train/value_loss": torch.stack(self.value_losses).mean(),
            "train/entropy_loss": torch.stack(self.entropy_losses).mean(),
            "train/clip_fraction": clip_fractions.mean(),
            # SB3's definition: the KL over the last epoch run, i.e. where the update ended.
            "train/approx_kl": epoch_means[-1],
            "train/loss": self.last_loss,  # type: ignore[dict-item]  # SB3: last minibatch
        }
        if self.grad_norms:  # empty when early stopping fired before the first step
            named["train/grad_norm"] = torch.stack(self.grad_norms).mean()
        named.update({epoch_kl_name(i): kl for i, kl in enumerate(epoch_means, start=1)})
        quantiles = ratio_quantiles(torch.cat(self.last_epoch_ratios))
        named.update({f"train/ratio_{name}": value for name, value in quantiles.items()})
        named.update(extra)
        values = torch.stack([v.to(torch.float64) for v in named.values()]).tolist()
        return dict(zip(named, values, strict=True))


class PlatformPPO(PPO):
    """SB3 PPO with our update, built from parts it holds rather than inherits: the policy
    term (`objective`, the clipped surrogate by default; `KLPenaltyObjective` for `ppo_kl`),
    the fast paths (`fast_paths`, a `FastPathStrategy`) and the update hooks (`update_hooks`:
    listeners get each update's metrics right after it, a stop condition ends training on an
    update boundary). SB3 collects rollouts and computes GAE; `_train` is the whole update.

    After the last epoch one extra forward pass over the whole rollout measures the KL between
    the rollout policy and the updated one (`train/approx_kl_post`). `kl_source="post_update"`
    makes `target_kl` read that KL after every epoch; the default, `"minibatch"`, keeps SB3's
    rule (a minibatch's KL before its own step), so this class steps exactly like stock PPO.
    """

    fast_paths: FastPathStrategy
    n_updates_done: int = 0

    def __init__(
        self,
        *args: Any,
        kl_source: KLSource = "minibatch",
        objective: PolicyObjective | None = None,
        update_listeners: list[UpdateListener] | None = None,
        **kwargs: Any,
    ) -> None:
        if kl_source not in ("minibatch", "post_update"):
            raise ValueError(f"kl_source must be 'minibatch' or 'post_update', not {kl_source!r}")
        self.kl_source = kl_source
        self.objective: PolicyObjective = objective or ClipObjective()
        self.update_hooks = UpdateHooks(update_listeners)
        super().__init__(*args, **kwargs)

    # -- the parts, wired into SB3's loop -------------------------------------------------

    def add_update_listener(self, listener: UpdateListener) -> None:
        """Call `listener(model, metrics)` after every update, once its metrics are known."""
        self.update_hooks.listeners.append(listener)

    def set_stop_condition(self, condition: StopCondition | None) -> None:
        """Stop cleanly once `condition()` is true, checked before each rollout (None: never)."""
        self.update_hooks.stop_condition = condition

    def stop_requested(self) -> bool:
        return self.update_hooks.stop_requested()

    def _setup_model(self) -> None:
        self.fast_paths = FastPathStrategy.set_up(self, super()._setup_model)
        state = self.__dict__.pop("kl_state", None)  # set by `load` from a ppo_kl model's data
        if state is not None:
            self.objective = KLPenaltyObjective.from_state(state)

    def _excluded_save_params(self) -> list[str]:
        # The objective is saved as plain data (`kl_state`): a model.zip loads in stock SB3.
        parts = ["fast_paths", "objective", "update_hooks"]
        return [*super()._excluded_save_params(), *parts]

    def save(self, *args: Any, **kwargs: Any) -> None:
        """SB3's save, naming the stock policy class (stock SB3 loads the file)."""
        state = self.objective.state()
        if state is not None:
            self.kl_state = state
        try:
            with saving_as_stock(self):
                super().save(*args, **kwargs)
        finally:
            self.__dict__.pop("kl_state", None)

    def collect_rollouts(self, *args: Any, **kwargs: Any) -> bool:
        if self.update_hooks.stop_requested():
            return False
        with self.fast_paths.rollout():
            return super().collect_rollouts(*args, **kwargs)

    def train(self) -> None:
        self.update_hooks.run_update(self, self._update)

    def _update(self) -> None:
        with self.fast_paths.update():
            self._train()
        for key, value in self.objective.after_update(self.logger.name_to_value).items():
            self.logger.record(key, value)

    # -- the update ------------------------------------------------------------------------

    def _manual_loss(self) -> ManualLoss | None:
        """The autograd-free loss when the fast paths are on, it covers this policy and this
        class's objective."""
        if not self.fast_paths.on or not self.objective.manual_gradients:
            return None
        return ManualLoss.build(self.policy)

    def _minibatch(
        self,
        batch: RolloutBufferSamples,
        manual: ManualLoss | None,
        discrete: bool,
        clips: tuple[float, float | None],
    ) -> tuple[PolicyLossOutput, Tensor, Tensor, Tensor, list[Tensor] | None]:
        """The loss terms of one minibatch, and its gradients when `manual` computes them."""
        clip_epsilon, clip_range_vf = clips
        advantages = batch.advantages
        # A minibatch of one has no spread to normalize by (SB3 issue #325).
        if self.normalize_advantage and len(advantages) > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        if manual is not None:
            coefficients = (clip_epsilon, self.ent_coef, self.vf_coef, clip_range_vf)
            return manual(
                batch.observations, batch.actions, batch.old_log_prob, advantages,
                batch.old_values, batch.returns, coefficients,
            )  # fmt: skip
        actions = batch.actions.long().flatten() if discrete else batch.actions
        if self.fast_paths.on:
            values, log_prob, entropy = evaluate_actions(self.policy, batch.observations, actions)
        else:
            values, log_prob, entropy = self.policy.evaluate_actions(batch.observations, actions)
        values = values.flatten()
        out = self.objective.loss(log_prob, batch.old_log_prob, advantages, clip_epsilon)
        if clip_range_vf is not None:
            values = batch.old_values + torch.clamp(
                values - batch.old_values, -clip_range_vf, clip_range_vf
            )
        value_loss = F.mse_loss(batch.returns, values)
        # Without an analytical entropy, -log_prob estimates it.
        entropy_loss = -torch.mean(-log_prob) if entropy is None else -torch.mean(entropy)
        loss = out.loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
        return out, value_loss, entropy_loss, loss, None

    def _post_update_kl(
        self, rollout: BufferRollout, discrete: bool, manual: ManualLoss | None
    ) -> Tensor:
        """k3 KL(pi_rollout || pi_now) over the whole rollout: no gradients, no random draws."""
        observations, actions, old_log_prob = rollout.whole()
        if manual is not None and isinstance(observations, Tensor):  # no mode-dependent layer
            starts = range(0, rollout.size, POST_KL_CHUNK)
            rows = [slice(start, start + POST_KL_CHUNK) for start in starts]
            log_prob = [manual.log_prob(observations[r], actions[r]) for r in rows]
            return k3_kl(torch.cat(log_prob), old_log_prob)
        if discrete:
            actions = actions.long().flatten()
        self.policy.set_training_mode(False)  # e.g. batch-norm statistics stay as they are
        log_probs = []
        with torch.no_grad():
            for start in range(0, rollout.size, POST_KL_CHUNK):
                stop = start + POST_KL_CHUNK
                distribution = self.policy.get_distribution(_rows(observations, start, stop))
                log_probs.append(distribution.log_prob(actions[start:stop]))
        self.policy.set_training_mode(True)
        return k3_kl(torch.cat(log_probs), old_log_prob)

    def _train(self) -> None:
        """One update: K epochs of minibatch steps over the rollout buffer."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        progress = self._current_progress_remaining
        clip_range = float(self.clip_range(progress))  # type: ignore[operator]
        clip_epsilon = max(clip_range, MIN_CLIP_EPSILON)
        clip_range_vf: float | None = None
        if self.clip_range_vf is not None:
            clip_range_vf = float(self.clip_range_vf(progress))  # type: ignore[operator]
        discrete = isinstance(self.action_space, spaces.Discrete)
        record = _UpdateRecord()
        rollout, step = self._update_pieces()
        manual = self._manual_loss()
        early_stop_epoch = None
        post_kl: Tensor | None = None

        for epoch in range(1, self.n_epochs + 1):
            record.start_epoch()
            for batch in rollout.minibatches(self.batch_size):
                out, value_loss, entropy_loss, loss, grads = self._minibatch(
                    batch, manual, discrete, (clip_epsilon, clip_range_vf)
                )
                record.add(out, value_loss, entropy_loss, loss)

                # The one sync we cannot avoid, and only when asked for: step or stop?
                if (
                    self.target_kl is not None
                    and self.kl_source == "minibatch"
                    and out.approx_kl.item() > TARGET_KL_FACTOR * self.target_kl
                ):
                    early_stop_epoch = epoch
                    break
                # Returns the norm before clipping: the diagnostic we want.
                if grads is None:
                    record.grad_norms.append(step(loss, self.max_grad_norm))
                else:  # only the fast paths compute gradients by hand
                    assert isinstance(step, MinibatchStep)
                    record.grad_norms.append(step.with_grads(grads, self.max_grad_norm))
            self._n_updates += 1
            if self.target_kl is not None and self.kl_source == "post_update":
                post_kl = self._post_update_kl(rollout, discrete, manual)  # where this epoch ended
                if post_kl.item() > TARGET_KL_FACTOR * self.target_kl:
                    early_stop_epoch = epoch
            if early_stop_epoch is not None:
                break

        if post_kl is None:  # not measured after the last epoch yet
            post_kl = self._post_update_kl(rollout, discrete, manual)
        extra = {
            "train/approx_kl_post": post_kl,
            **rollout_statistics(self.rollout_buffer, self.policy),
        }
        metrics = record.read(extra)
        metrics["train/clip_range"] = clip_range
        if clip_range_vf is not None:
            metrics["train/clip_range_vf"] = clip_range_vf
        if early_stop_epoch is not None:
            metrics["train/early_stop_epoch"] = float(early_stop_epoch)
        self._record(metrics)

    def _update_pieces(self) -> tuple[BufferRollout, OptimizerStep]:
        """The rollout's minibatches and the minibatch step: stock, or the fast paths'."""
        # Looked up once: policy.parameters() walks every submodule on each call.
        parameters: list[Tensor] = list(self.policy.parameters())
        if not self.fast_paths.on:
            return BufferRollout(self.rollout_buffer), OptimizerStep(
                self.policy.optimizer, parameters
            )
        rollout = RolloutTensors.for_buffer(self.rollout_buffer)
        return rollout, MinibatchStep(self.policy.optimizer, parameters)

    def _record(self, metrics: dict[str, Any]) -> None:
        for key, value in metrics.items():
            self.logger.record(key, value)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")


def kl_penalty_ppo(
    *args: Any,
    kl_target: float = 0.01,
    kl_beta_init: float = 1.0,
    kl_rule: Literal["lesson", "paper"] = "lesson",
    **kwargs: Any,
) -> PlatformPPO:
    """`algorithm: ppo_kl`: our PPO with the adaptive KL penalty as its objective (built first:
    it validates its arguments before SB3 allocates anything). Loads with `PlatformPPO.load`."""
    objective = KLPenaltyObjective.adaptive(kl_target, kl_beta_init, kl_rule)
    return PlatformPPO(*args, objective=objective, **kwargs)

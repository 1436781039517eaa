"""Replaces autograd (`loss.backward()`) in the PPO update, and `ActorCriticPolicy.forward` in
rollouts, for SB3's default MLP policy: the minibatch loss and its gradients by hand.

On a small MLP the autograd graph costs more than the arithmetic: every forward op records a
node, and the backward engine walks them one by one. For the policy SB3 builds from
`MlpPolicy` on a flat Box observation (separate policy and value MLPs of Linear + Tanh/ReLU
layers) with a Discrete action (a categorical head) or a Box action (a diagonal Gaussian with a
state-independent log std) `ManualLoss` computes the forward pass under `no_grad` and the
gradients with the very kernels autograd's formulas call (`addmm`'s three backward products,
`tanh_backward`, `mse_loss_backward`, `_softmax_backward_data`, the tie-splitting `minimum`
rule, ...; the heads in `ppo_platform.trainers.fast.manual_heads`), in the same order. The
gradients are
equal to `loss.backward()`'s bit for bit (tests/trainers_tests/fast/test_manual.py), so a seed
follows the same trajectory as stock SB3.

Anything else (gSDE, shared layers, a custom extractor or policy, another objective) returns
None from `ManualLoss.build` and the update takes the autograd path.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from gymnasium import spaces
from stable_baselines3.common.distributions import (
    CategoricalDistribution,
    DiagGaussianDistribution,
)
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor, MlpExtractor
from torch import Tensor, nn

from ..losses import PolicyLossOutput
from .manual_heads import (
    CategoricalHead,
    GaussianHead,
    RolloutGaussian,
    Surrogate,
    normal_log_prob,
)

_ACTIVATIONS: dict[type, str] = {nn.Tanh: "tanh", nn.ReLU: "relu"}
_HEADS = (CategoricalDistribution, DiagGaussianDistribution)
_Layers = list[tuple[Tensor, Tensor, str | None]]


class ManualOutput(NamedTuple):
    """What the autograd path's minibatch produces: the loss terms and the gradients."""

    policy: PolicyLossOutput
    value_loss: Tensor
    entropy_loss: Tensor
    loss: Tensor
    grads: list[Tensor]  # in the order of the policy's parameters()


def _layers(net: nn.Module) -> _Layers | None:
    """(weight, bias, activation) of a Sequential of Linear (+ Tanh/ReLU) layers, else None."""
    if type(net) is not nn.Sequential:
        return None
    modules, i = list(net), 0
    layers: _Layers = []
    while i < len(modules):
        linear = modules[i]
        if type(linear) is not nn.Linear or linear.bias is None:
            return None
        activation = None
        if i + 1 < len(modules) and type(modules[i + 1]) is not nn.Linear:
            activation = _ACTIVATIONS.get(type(modules[i + 1]))
            if activation is None:
                return None
            i += 1
        layers.append((linear.weight, linear.bias, activation))
        i += 1
    return layers


def _forward(layers: _Layers, x: Tensor) -> tuple[Tensor, list[Tensor], list[Tensor]]:
    """F.linear's addmm and the activation, keeping each layer's input and output."""
    inputs, outputs = [], []
    for weight, bias, activation in layers:
        inputs.append(x)
        x = torch.addmm(bias, x, weight.t())
        if activation == "tanh":
            x = torch.tanh(x)
        elif activation == "relu":
            x = torch.relu(x)
        outputs.append(x)
    return x, inputs, outputs


def _backward(
    layers: _Layers, inputs: list[Tensor], outputs: list[Tensor], grad: Tensor, into: list
) -> None:
    """autograd's gradients of the layers' parameters, given the gradient of the last output."""
    for k in range(len(layers) - 1, -1, -1):
        weight, bias, activation = layers[k]
        if activation == "tanh":
            grad = torch.ops.aten.tanh_backward(grad, outputs[k])
        elif activation == "relu":
            grad = torch.ops.aten.threshold_backward(grad, outputs[k], 0)
        into.append(grad.sum([0], keepdim=True).view(bias.shape))  # the engine's sum_to
        into.append(grad.t().mm(inputs[k]))  # mm_mat2_backward of weight.t(), transposed
        if k > 0 or inputs[0].requires_grad:
            grad = grad.mm(weight)  # mm_mat1_backward


class ManualLoss:
    """Forward and backward of PlatformPPO's minibatch loss for one policy, without autograd."""

    def __init__(self, policy: ActorCriticPolicy, pi: _Layers, vf: _Layers) -> None:
        self.parameters = list(policy.parameters())
        action_net, value_net = policy.action_net, policy.value_net
        assert isinstance(action_net, nn.Linear) and isinstance(value_net, nn.Linear)
        self.pi: _Layers = [*pi, (action_net.weight, action_net.bias, None)]
        self.vf: _Layers = [*vf, (value_net.weight, value_net.bias, None)]
        # The Gaussian head's state-independent log std (None: a categorical head).
        self.log_std: Tensor | None = getattr(policy, "log_std", None)
        if type(policy.action_dist) is not DiagGaussianDistribution:
            self.log_std = None
        self.rollout_gaussian = None if self.log_std is None else RolloutGaussian(self.log_std)
        # _backward appends (bias, weight) gradients from the last layer to the first, then
        # the head appends its own parameter's.
        order = [p for layers in (self.vf, self.pi) for w, b, _ in reversed(layers) for p in (b, w)]
        order += [] if self.log_std is None else [self.log_std]
        position = {id(p): i for i, p in enumerate(order)}
        self.order = [position.get(id(p), -1) for p in self.parameters]

    @classmethod
    def build(cls, policy: nn.Module) -> ManualLoss | None:
        """A ManualLoss when `policy` is one it covers exactly, else None."""
        # SB3's class itself, or the fast paths' subclass of it (ppo_platform.trainers.fast.policy).
        stock = type(policy).__dict__.get("stock_class", type(policy))
        if not isinstance(policy, ActorCriticPolicy) or stock is not ActorCriticPolicy:
            return None
        if not policy.share_features_extractor:
            return None
        if type(policy.features_extractor) is not FlattenExtractor:
            return None
        box = policy.observation_space
        # preprocess_obs casts a float Box to float32 (which `_forward`'s .float() does too);
        # an integer Box may be an image, divided by 255 first.
        if not isinstance(box, spaces.Box) or box.dtype.kind != "f":
            return None
        if type(policy.action_dist) not in _HEADS:
            return None
        extractor = policy.mlp_extractor
        if type(extractor) is not MlpExtractor:
            return None
        pi, vf = _layers(extractor.policy_net), _layers(extractor.value_net)
        heads = (policy.action_net, policy.value_net)
        if (
            pi is None
            or vf is None
            or any(type(h) is not nn.Linear or h.bias is None for h in heads)
        ):
            return None
        manual = cls(policy, pi, vf)
        covered = {id(p) for w, b, _ in manual.pi + manual.vf for p in (w, b)}
        if manual.log_std is not None:
            covered.add(id(manual.log_std))
        if covered != {id(p) for p in manual.parameters} or len(covered) != len(manual.parameters):
            return None  # a parameter this class does not differentiate
        return manual

    def __call__(
        self,
        observations: Tensor,
        actions: Tensor,
        old_log_prob: Tensor,
        advantages: Tensor,
        old_values: Tensor,
        returns: Tensor,
        coefficients: tuple[float, float, float, float | None],
    ) -> ManualOutput:
        """`coefficients` = (clip_epsilon, ent_coef, vf_coef, clip_range_vf); advantages
        already normalized as the update wants them."""
        clip_epsilon, ent_coef, vf_coef, clip_range_vf = coefficients
        with torch.no_grad():
            x = observations.float().flatten(1)  # preprocess_obs + FlattenExtractor
            params, pi_in, pi_out = _forward(self.pi, x)
            raw_values, vf_in, vf_out = _forward(self.vf, x)
            head = self._head(params, actions)
            policy = Surrogate(head.log_prob, old_log_prob, advantages, clip_epsilon)
            values = raw_values.flatten()
            if clip_range_vf is not None:
                difference = values - old_values
                values = old_values + torch.clamp(difference, -clip_range_vf, clip_range_vf)
            value_loss = torch.nn.functional.mse_loss(returns, values)
            entropy_loss = -torch.mean(head.entropy)
            loss = policy.out.loss + ent_coef * entropy_loss + vf_coef * value_loss

            one = torch.ones_like(loss)  # the seed of loss.backward()
            grad_values = torch.ops.aten.mse_loss_backward(one * vf_coef, values, returns, 1)
            if clip_range_vf is not None:
                inside = (difference >= -clip_range_vf).logical_and_(difference <= clip_range_vf)
                grad_values = torch.where(inside, grad_values, torch.zeros((), dtype=one.dtype))
            grads: list[Tensor] = []
            _backward(self.vf, vf_in, vf_out, grad_values.view(raw_values.shape), grads)
            grad_params, *grad_head = head.backward(policy.backward(one), one * ent_coef)
            _backward(self.pi, pi_in, pi_out, grad_params, grads)
            grads += grad_head
        return ManualOutput(
            policy.out, value_loss, entropy_loss, loss, [grads[i] for i in self.order]
        )

    def _head(self, params: Tensor, actions: Tensor) -> CategoricalHead | GaussianHead:
        if self.log_std is None:
            return CategoricalHead(params, actions)
        return GaussianHead(params, self.log_std, actions)

    def forward(self, obs: Tensor, deterministic: bool = False) -> tuple[Tensor, Tensor, Tensor]:
        """`ActorCriticPolicy.forward` (actions, values, log-probs) for rollout collection: the
        same kernels and the same random draw as torch's Categorical or Normal, without the
        modules' and the distribution's Python."""
        x = obs.float().flatten(1)
        params = _forward(self.pi, x)[0]
        values = _forward(self.vf, x)[0]
        if self.rollout_gaussian is not None:
            actions, log_prob = self.rollout_gaussian.sample(params, deterministic)
            return actions, values, log_prob
        logits = params - params.logsumexp(dim=-1, keepdim=True)
        if deterministic:
            actions = torch.argmax(torch.softmax(logits, dim=-1), dim=1)
        else:  # Categorical.sample
            actions = torch.multinomial(torch.softmax(logits, dim=-1), 1, True).T.reshape(-1)
        log_prob = logits.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
        return actions, values, log_prob

    def log_prob(self, observations: Tensor, actions: Tensor) -> Tensor:
        """The policy's log-probabilities of `actions` (no gradients), as its distribution's."""
        with torch.no_grad():
            params = _forward(self.pi, observations.float().flatten(1))[0]
            if self.log_std is not None:
                std = torch.ones_like(params) * self.log_std.exp()
                return normal_log_prob(params, std, actions)
            logits = params - params.logsumexp(dim=-1, keepdim=True)
            return logits.gather(-1, actions.long().flatten().unsqueeze(-1)).squeeze(-1)

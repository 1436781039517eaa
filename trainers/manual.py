"""The PPO minibatch loss and its gradients by hand, for SB3's default MLP policy.

On a small MLP the autograd graph costs more than the arithmetic: every forward op records a
node, and the backward engine walks them one by one. For the policy SB3 builds from
`MlpPolicy` on a flat Box observation with a Discrete action (separate policy and value MLPs of
Linear + Tanh/ReLU layers, a categorical head) `ManualLoss` computes the forward pass under
`no_grad` and the gradients with the very kernels autograd's formulas call (`addmm`'s three
backward products, `tanh_backward`, `mse_loss_backward`, `_softmax_backward_data`, the
tie-splitting `minimum` rule, ...), in the same order. The gradients are equal to
`loss.backward()`'s bit for bit (tests/trainers_tests/test_manual.py), so a seed follows the
same trajectory as stock SB3.

Anything else (a Gaussian head, shared layers, a custom extractor or policy, another objective)
returns None from `ManualLoss.build` and the update takes the autograd path.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from gymnasium import spaces
from stable_baselines3.common.distributions import CategoricalDistribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor, MlpExtractor
from torch import Tensor, nn

from .losses import PolicyLossOutput

_ACTIVATIONS: dict[type, str] = {nn.Tanh: "tanh", nn.ReLU: "relu"}
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
    """Forward and backward of ClipPPO's minibatch loss for one policy, without autograd."""

    def __init__(self, policy: ActorCriticPolicy, pi: _Layers, vf: _Layers) -> None:
        self.parameters = list(policy.parameters())
        action_net, value_net = policy.action_net, policy.value_net
        assert isinstance(action_net, nn.Linear) and isinstance(value_net, nn.Linear)
        self.pi: _Layers = [*pi, (action_net.weight, action_net.bias, None)]
        self.vf: _Layers = [*vf, (value_net.weight, value_net.bias, None)]
        # _backward appends (bias, weight) gradients from the last layer to the first.
        order = [p for layers in (self.vf, self.pi) for w, b, _ in reversed(layers) for p in (b, w)]
        position = {id(p): i for i, p in enumerate(order)}
        self.order = [position.get(id(p), -1) for p in self.parameters]

    @classmethod
    def build(cls, policy: nn.Module) -> ManualLoss | None:
        """A ManualLoss when `policy` is one it covers exactly, else None."""
        if type(policy) is not ActorCriticPolicy or not policy.share_features_extractor:
            return None
        if type(policy.features_extractor) is not FlattenExtractor:
            return None
        box = policy.observation_space
        if not isinstance(box, spaces.Box) or box.dtype != "float32":
            return None
        if type(policy.action_dist) is not CategoricalDistribution:
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
            policy = _PolicyTerms(params, actions, old_log_prob, advantages, clip_epsilon)
            values = raw_values.flatten()
            if clip_range_vf is not None:
                difference = values - old_values
                values = old_values + torch.clamp(difference, -clip_range_vf, clip_range_vf)
            value_loss = torch.nn.functional.mse_loss(returns, values)
            entropy_loss = -torch.mean(policy.entropy)
            loss = policy.out.loss + ent_coef * entropy_loss + vf_coef * value_loss

            one = torch.ones_like(loss)  # the seed of loss.backward()
            grad_values = torch.ops.aten.mse_loss_backward(one * vf_coef, values, returns, 1)
            if clip_range_vf is not None:
                inside = (difference >= -clip_range_vf).logical_and_(difference <= clip_range_vf)
                grad_values = torch.where(inside, grad_values, torch.zeros((), dtype=one.dtype))
            grads: list[Tensor] = []
            _backward(self.vf, vf_in, vf_out, grad_values.view(raw_values.shape), grads)
            _backward(self.pi, pi_in, pi_out, policy.backward(one, one * ent_coef), grads)
        return ManualOutput(
            policy.out, value_loss, entropy_loss, loss, [grads[i] for i in self.order]
        )

    def forward(self, obs: Tensor, deterministic: bool = False) -> tuple[Tensor, Tensor, Tensor]:
        """`ActorCriticPolicy.forward` (actions, values, log-probs) for rollout collection: the
        same kernels and the same random draw as torch's Categorical, without the modules' and
        the distribution's Python."""
        x = obs.float().flatten(1)
        params = _forward(self.pi, x)[0]
        values = _forward(self.vf, x)[0]
        logits = params - params.logsumexp(dim=-1, keepdim=True)
        if deterministic:
            actions = torch.argmax(torch.softmax(logits, dim=-1), dim=1)
        else:  # Categorical.sample
            actions = torch.multinomial(torch.softmax(logits, dim=-1), 1, True).T.reshape(-1)
        log_prob = logits.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
        return actions, values, log_prob

    def log_prob(self, observations: Tensor, actions: Tensor) -> Tensor:
        """The policy's log-probabilities of `actions` (no gradients): Categorical.log_prob."""
        with torch.no_grad():
            params = _forward(self.pi, observations.float().flatten(1))[0]
            logits = params - params.logsumexp(dim=-1, keepdim=True)
            return logits.gather(-1, actions.long().flatten().unsqueeze(-1)).squeeze(-1)


class _PolicyTerms:
    """The categorical head and the clipped surrogate: forward at construction, backward on
    request; the ops of `lean.evaluate_actions` and `losses.clipped_policy_loss`."""

    def __init__(
        self, params: Tensor, actions: Tensor, old: Tensor, adv: Tensor, clip_epsilon: float
    ) -> None:
        self.params, self.adv, self.eps = params, adv, clip_epsilon
        self.lse = params.logsumexp(dim=-1, keepdim=True)
        self.logits = params - self.lse
        self.index = actions.long().flatten().unsqueeze(-1)
        log_prob = self.logits.gather(-1, self.index).squeeze(-1)
        self.clamped = torch.clamp(self.logits, min=torch.finfo(self.logits.dtype).min)
        self.probs = torch.softmax(self.logits, dim=-1)
        self.entropy = -(self.clamped * self.probs).sum(-1)
        log_ratio = log_prob - old
        self.ratio = log_ratio.exp()
        self.clipped = self.ratio.clamp(1.0 - clip_epsilon, 1.0 + clip_epsilon) * adv
        self.unclipped = self.ratio * adv
        surrogate = torch.minimum(self.unclipped, self.clipped)
        loss = (-surrogate).mean()
        self.out = PolicyLossOutput(loss, log_ratio, self.ratio, None, clip_epsilon)

    def backward(self, seed: Tensor, entropy_seed: Tensor) -> Tensor:
        """Gradient of (policy loss * seed + entropy loss * entropy_seed) w.r.t. the params."""
        n = self.ratio.numel()
        grad = -(seed.expand(self.ratio.shape) / n)  # MeanBackward, NegBackward
        # minimum: a tie sends half the gradient to each side.
        s, c = self.unclipped, self.clipped
        grad_s = torch.where(s == c, grad / 2, grad).masked_fill_(s > c, 0)
        grad_c = torch.where(s == c, grad / 2, grad).masked_fill_(s < c, 0)
        lo, hi = 1.0 - self.eps, 1.0 + self.eps
        inside = (self.ratio >= lo).logical_and_(self.ratio <= hi)
        grad_ratio = torch.where(inside, grad_c * self.adv, torch.zeros((), dtype=grad.dtype))
        grad_ratio = grad_ratio + grad_s * self.adv
        grad_log_prob = (grad_ratio * self.ratio).unsqueeze(-1)  # ExpBackward, SubBackward
        grad_logits = torch.zeros_like(self.logits).scatter_add_(-1, self.index, grad_log_prob)
        # entropy_loss = -mean(-(clamped * probs).sum(-1)): the two negations cancel exactly.
        grad_entropy = entropy_seed.expand(self.entropy.shape) / n
        grad_product = grad_entropy.unsqueeze(-1).expand(self.logits.shape)
        grad_clamped = grad_product * self.probs
        grad_probs = grad_product * self.clamped
        floor = torch.finfo(self.logits.dtype).min
        zero = torch.zeros((), dtype=grad.dtype)
        # The engine sums the three gradients of the logits in this order (entropy's two first).
        from_entropy = torch.where(self.logits >= floor, grad_clamped, zero)
        from_entropy = from_entropy + torch._softmax_backward_data(
            grad_probs, self.probs, -1, self.probs.dtype
        )
        grad_logits = from_entropy + grad_logits
        # logits = params - logsumexp(params): both sides reach params.
        grad_lse = (-grad_logits).sum([1], keepdim=True)
        return grad_logits + grad_lse * (self.params - self.lse).exp()

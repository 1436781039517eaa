"""The compiled path's weights (and Adam state) in and out of a stable-baselines3
`ActorCriticPolicy`: the trained agent is saved, loaded, evaluated and exported as a plain SB3
`PPO` whose `predict` gives the compiled policy's actions.

The layouts: JAX keeps a layer as `x @ w + b` with `w` of shape (in, out); torch's `Linear`
keeps `weight` as (out, in). SB3's `MlpPolicy` names the layers `mlp_extractor.policy_net.{0,2,
...}`, `mlp_extractor.value_net.{0,2,...}` (activations between), `action_net` and `value_net`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.policies import ActorCriticPolicy

Params = dict[str, Any]


def _torch_names(params: Params) -> Iterator[tuple[str, tuple[str, int | None]]]:
    """(torch module name, where the layer is in `params`) for every Linear layer."""
    for index in range(len(params["pi"])):
        yield f"mlp_extractor.policy_net.{2 * index}", ("pi", index)
    for index in range(len(params["vf"])):
        yield f"mlp_extractor.value_net.{2 * index}", ("vf", index)
    yield "action_net", ("action", None)
    yield "value_net", ("value", None)


def _layer(tree: Params, where: tuple[str, int | None]) -> dict[str, Any]:
    group, index = where
    return tree[group] if index is None else tree[group][index]


def _as_torch(layer: dict[str, Any]) -> dict[str, torch.Tensor]:
    weight = np.asarray(layer["w"], dtype=np.float32).T.copy()
    bias = np.array(layer["b"], dtype=np.float32)  # a copy: JAX's arrays are read-only
    return {"weight": torch.from_numpy(weight), "bias": torch.from_numpy(bias)}


def _check_shapes(policy: ActorCriticPolicy, params: Params) -> dict[str, torch.nn.Parameter]:
    named = dict(policy.named_parameters())
    for name, where in _torch_names(params):
        for part, value in _as_torch(_layer(params, where)).items():
            key = f"{name}.{part}"
            if key not in named or tuple(named[key].shape) != tuple(value.shape):
                have = tuple(named[key].shape) if key in named else "missing"
                raise ValueError(
                    f"the SB3 policy's {key} is {have}, the compiled weights' {tuple(value.shape)}:"
                    " build the policy with the same net_arch and action space"
                )
    expected = {f"{name}.{part}" for name, _ in _torch_names(params) for part in ("weight", "bias")}
    extra = sorted(set(named) - expected)
    if extra:
        raise ValueError(f"the SB3 policy has parameters the compiled net lacks: {extra}")
    return named


@torch.no_grad()
def load_into_policy(
    policy: ActorCriticPolicy, params: Params, adam: dict[str, Any] | None = None
) -> None:
    """Copy one seed's weights (numpy or JAX leaves) into `policy`; with `adam` ({"m", "v",
    "t"} as the compiled optimiser keeps them) also its Adam moments and step count, so a run
    resumed from the saved model continues the same optimiser."""
    named = _check_shapes(policy, params)
    for name, where in _torch_names(params):
        for part, value in _as_torch(_layer(params, where)).items():
            named[f"{name}.{part}"].copy_(value)
    if adam is None:
        return
    step = float(np.asarray(adam["t"]))
    optimizer = policy.optimizer
    for name, where in _torch_names(params):
        moments = {k: _as_torch(_layer(adam[k], where)) for k in ("m", "v")}
        for part in ("weight", "bias"):
            optimizer.state[named[f"{name}.{part}"]] = {
                "step": torch.tensor(step),
                "exp_avg": moments["m"][part].clone(),
                "exp_avg_sq": moments["v"][part].clone(),
            }


def _from_torch(source: dict[str, torch.Tensor]) -> dict[str, Any]:
    return {"w": source["weight"].detach().numpy().T.copy(), "b": source["bias"].detach().numpy()}


@torch.no_grad()
def params_from_policy(policy: ActorCriticPolicy, n_pi: int, n_vf: int) -> tuple[Params, Any]:
    """The weights and Adam state of an SB3 policy in the compiled layout (a resume's start):
    `n_pi`, `n_vf` hidden layers. Adam's state is None when the optimiser has not stepped."""
    named = dict(policy.named_parameters())
    shape: Params = {"pi": [None] * n_pi, "vf": [None] * n_vf, "action": None, "value": None}

    def tree(read: Any) -> Params:
        out: Params = {"pi": [], "vf": []}
        for name, (group, index) in _torch_names(shape):
            layer = read(name)
            if index is None:
                out[group] = layer
            else:
                out[group].append(layer)
        return out

    def weights(name: str) -> dict[str, Any]:
        return _from_torch({p: named[f"{name}.{p}"] for p in ("weight", "bias")})

    params = tree(weights)
    state = policy.optimizer.state
    if not all(named[f"{name}.weight"] in state for name, _ in _torch_names(shape)):
        return params, None

    def moment(key: str) -> Any:
        def read(name: str) -> dict[str, Any]:
            return _from_torch({p: state[named[f"{name}.{p}"]][key] for p in ("weight", "bias")})

        return tree(read)

    step = int(float(state[named["action_net.weight"]]["step"]))
    return params, {"m": moment("exp_avg"), "v": moment("exp_avg_sq"), "t": np.int32(step)}

"""The update's pieces as stock stable-baselines3 and torch do them: what `PlatformPPO` runs with
the fast paths off, and the shapes `ppo_platform.trainers.fast` fills with faster equivalents.

- `BufferRollout`: the rollout buffer's minibatches from `RolloutBuffer.get` (replaced by
  `ppo_platform.trainers.fast.rollout_buffer.RolloutTensors`).
- `OptimizerStep`: `zero_grad`, `backward`, `clip_grad_norm_`, `step`, as SB3's `PPO.train`
  takes a minibatch step (replaced by `ppo_platform.trainers.fast.optimizer_step.MinibatchStep`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.type_aliases import RolloutBufferSamples
from torch import Tensor

Observations = Tensor | dict[str, Tensor]


class BufferRollout:
    """The rollout of one update, handed out by the buffer itself."""

    def __init__(self, buffer: RolloutBuffer) -> None:
        self.buffer = buffer
        self.size = buffer.buffer_size * buffer.n_envs

    def minibatches(self, batch_size: int) -> Iterator[RolloutBufferSamples]:
        """One epoch of shuffled minibatches."""
        yield from self.buffer.get(batch_size)

    def whole(self) -> tuple[Observations, Tensor, Tensor]:
        """Observations, actions and rollout log-probs of every transition, in buffer order.

        Valid once `minibatches()` has run (the buffer is flattened then); draws no random numbers.
        """
        buffer = self.buffer
        obs: Any = buffer.observations
        observations: Observations = (
            {key: buffer.to_torch(value) for key, value in obs.items()}
            if isinstance(obs, dict)
            else buffer.to_torch(obs)
        )
        actions = buffer.to_torch(buffer.actions.astype(np.float32, copy=False))
        return observations, actions, buffer.to_torch(buffer.log_probs.reshape(-1))


class OptimizerStep:
    """Backward, global-norm clip and optimizer step for one minibatch, as SB3 takes it."""

    def __init__(self, optimizer: torch.optim.Optimizer, parameters: list[Tensor]) -> None:
        self.optimizer = optimizer
        self.parameters = parameters

    def __call__(self, loss: Tensor, max_grad_norm: float) -> Tensor:
        """Step on `loss`; returns the gradient norm before clipping (a 0-d tensor, no sync)."""
        self.optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.parameters, max_grad_norm)
        self.optimizer.step()
        return norm

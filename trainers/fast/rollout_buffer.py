"""Replaces SB3's `RolloutBuffer.get` in the PPO update
(`ppo_platform.trainers.stock.BufferRollout`).

`RolloutTensors.minibatches()` yields exactly what `buffer.get(batch_size)` yields, with the
same `np.random.permutation` draw, but SB3 gathers every minibatch from numpy into fresh
tensors while these are index views of tensors converted once per update. A Dict-observation
or custom buffer keeps SB3's way (`for_buffer` returns a `BufferRollout` for it).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.type_aliases import RolloutBufferSamples
from torch import Tensor

from ..stock import BufferRollout, Observations

_BUFFER_FIELDS = ("observations", "actions", "values", "log_probs", "advantages", "returns")


class RolloutTensors(BufferRollout):
    """The rollout buffer as flat tensors, built once per update."""

    def __init__(self, buffer: RolloutBuffer) -> None:
        super().__init__(buffer)
        if not buffer.generator_ready:  # what buffer.get() does on its first call
            for name in _BUFFER_FIELDS:
                setattr(buffer, name, buffer.swap_and_flatten(getattr(buffer, name)))
            buffer.generator_ready = True
        arrays = [getattr(buffer, name) for name in _BUFFER_FIELDS]
        arrays[1] = arrays[1].astype(np.float32, copy=False)  # actions, as SB3 samples them
        arrays[2:] = [array.reshape(-1) for array in arrays[2:]]
        self.tensors = tuple(buffer.to_torch(array) for array in arrays)

    @classmethod
    def for_buffer(cls, buffer: RolloutBuffer) -> BufferRollout:
        """Tensors for SB3's own `RolloutBuffer`; the buffer's own `get` for any other."""
        return cls(buffer) if type(buffer) is RolloutBuffer else BufferRollout(buffer)

    def minibatches(self, batch_size: int) -> Iterator[RolloutBufferSamples]:
        order = torch.from_numpy(np.random.permutation(self.size)).to(self.tensors[0].device)
        for start in range(0, self.size, batch_size):
            index = order[start : start + batch_size]
            yield RolloutBufferSamples(*(tensor.index_select(0, index) for tensor in self.tensors))

    def whole(self) -> tuple[Observations, Tensor, Tensor]:
        return self.tensors[0], self.tensors[1], self.tensors[3]

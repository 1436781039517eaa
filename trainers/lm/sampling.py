"""Sampling responses: recorded settings, exact token ids, behavior log-probs taken at sampling.

A small loop of our own instead of `generate()`: every processor that shapes the behavior
distribution is one of the settings below (no hidden top-k or repetition penalty from a
generation config), and the log-prob of each sampled token under the distribution it was
actually drawn from is stored the moment it is drawn.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor

from .errors import LMTrainerError
from .policy import position_ids


@dataclass(frozen=True)
class SamplingSettings:
    """How responses are sampled; recorded with every rollout."""

    max_new_tokens: int = 8
    temperature: float = 1.0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if not (isinstance(self.max_new_tokens, int) and self.max_new_tokens >= 1):
            raise LMTrainerError(
                f"max_new_tokens must be an integer >= 1, got {self.max_new_tokens!r}"
            )
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise LMTrainerError(f"temperature must be > 0, got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise LMTrainerError(f"top_p must be in (0, 1], got {self.top_p!r}")

    @property
    def processes_distribution(self) -> bool:
        """True when sampling draws from something else than the policy's own softmax."""
        return self.temperature != 1.0 or self.top_p < 1.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Generation:
    """Prompt + response token ids and where the actions are. All (B, L); L = P + T."""

    input_ids: Tensor
    attention_mask: Tensor  # valid tokens: prompt and response, not padding
    action_mask: Tensor  # response tokens the policy chose (up to and including EOS)
    terminal_mask: Tensor  # the last action of each response: where the score lands
    behavior_log_probs: Tensor  # log mu(a_t | h_t) under the processed distribution, 0 elsewhere
    prompt_length: int  # P: responses start at this column
    ended_with_eos: Tensor  # (B,) bool: False when max_new_tokens cut the response


def process_logits(logits: Tensor, settings: SamplingSettings) -> Tensor:
    """Temperature, then nucleus (top-p) filtering: the behavior distribution's logits."""
    logits = logits.float() / settings.temperature
    if settings.top_p >= 1.0:
        return logits
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    cumulative = sorted_logits.softmax(-1).cumsum(-1)
    # Drop a token once the tokens before it already reach top_p; the first one always stays.
    drop_sorted = (cumulative - sorted_logits.softmax(-1)) >= settings.top_p
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, -math.inf)


def cache_argument(lm: Any) -> str:
    """The KV-cache keyword of `lm.forward`: transformers 5 renamed `past_key_values` to `cache`."""
    base = lm.get_base_model() if hasattr(lm, "get_base_model") else lm  # a peft wrapper: **kw
    parameters = inspect.signature(base.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def _append(tensor: Tensor, column: Tensor) -> Tensor:
    return torch.cat([tensor, column.unsqueeze(1).to(tensor.dtype)], dim=1)


@torch.no_grad()
def sample_responses(
    lm: Any,
    prompt_ids: Tensor,
    prompt_mask: Tensor,
    settings: SamplingSettings,
    eos_token_id: int,
    pad_token_id: int,
    generator: torch.Generator | None = None,
    greedy: bool = False,
) -> Generation:
    """Sample one response per left-padded prompt with a KV cache; stop at EOS.

    greedy=True takes the most likely token instead (evaluation); its log-probs are still those
    of the processed distribution.
    """
    batch, prompt_length = prompt_ids.shape
    ids, mask = prompt_ids, prompt_mask.long()
    finished = torch.zeros(batch, dtype=torch.bool, device=ids.device)
    actions, behavior = [], []
    step_ids, past = ids, None
    cache_name = cache_argument(lm)
    for _ in range(settings.max_new_tokens):
        out = lm(
            input_ids=step_ids,
            attention_mask=mask,
            position_ids=position_ids(mask)[:, -step_ids.shape[1] :],
            use_cache=True,
            **{cache_name: past},
        )
        past = getattr(out, "cache", None) or out.past_key_values
        logits = process_logits(out.logits[:, -1], settings)
        log_probs = torch.log_softmax(logits, dim=-1)
        if greedy:
            token = log_probs.argmax(-1)
        else:
            token = torch.multinomial(log_probs.exp(), 1, generator=generator).squeeze(1)
        token = torch.where(finished, pad_token_id, token)
        acting = ~finished
        actions.append(acting)
        behavior.append(torch.where(acting, log_probs.gather(1, token[:, None]).squeeze(1), 0.0))
        ids, mask = _append(ids, token), _append(mask, acting)
        finished = finished | (token == eos_token_id)
        step_ids = token[:, None]
        if bool(finished.all()):
            break
    action_tail = torch.stack(actions, dim=1)
    action_mask = torch.cat([torch.zeros_like(prompt_mask, dtype=torch.bool), action_tail], 1)
    lengths = action_tail.sum(1)
    terminal = torch.zeros_like(action_mask)
    has_action = lengths > 0
    rows = torch.arange(batch, device=ids.device)[has_action]
    terminal[rows, prompt_length + lengths[has_action] - 1] = True
    behavior_tail = torch.stack(behavior, dim=1)
    behavior_log_probs = torch.cat(
        [torch.zeros_like(prompt_ids, dtype=torch.float), behavior_tail], 1
    )
    return Generation(ids, mask, action_mask, terminal, behavior_log_probs, prompt_length, finished)

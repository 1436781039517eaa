"""The policy (a local causal LM, plus a value head when the advantages need a critic), its
reference and log-probs.

Token layout used everywhere in ppo_platform.trainers.lm: a (batch, length) tensor of token ids,
prompts
left-padded and responses right-padded; every per-token tensor has the same shape, and entry j
describes token j given tokens < j (entry 0 predicts nothing and is never an action).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from .errors import LMTrainerError


def load_causal_lm(path: str | Path) -> Any:
    """A causal LM from a local folder in transformers format; never a hub name."""
    from transformers import AutoModelForCausalLM

    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise LMTrainerError(
            f"model folder {str(folder)!r} has no config.json; pass a local folder written by "
            "save_pretrained (hub names are not downloaded)"
        )
    return AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer saved beside the model, with a pad token (the EOS token when it has none)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(Path(path), local_files_only=True)
    if tokenizer.eos_token_id is None:
        raise LMTrainerError(
            f"the tokenizer in {str(path)!r} has no EOS token; a response needs one to end"
        )
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def position_ids(attention_mask: Tensor) -> Tensor:
    """Positions counted over real tokens only, so a left-padded prompt starts at position 0."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def max_positions(config: Any) -> int | None:
    """How many positions the model can attend to, from its config (None: not stated)."""
    for name in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    return None


@dataclass(frozen=True)
class TokenTerms:
    """Per-token log-probs of the tokens taken, value estimates and entropies, all (B, L)."""

    log_probs: Tensor
    values: Tensor
    entropy: Tensor


def _shift(per_position: Tensor) -> Tensor:
    """Move predictions made at position j-1 to entry j (entry 0 gets 0)."""
    return torch.cat([per_position.new_zeros(per_position.shape[0], 1), per_position[:, :-1]], 1)


def gather_log_probs(logits: Tensor, input_ids: Tensor) -> Tensor:
    """log pi(token j | tokens < j) for every j, from logits of shape (B, L, V)."""
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    taken = log_probs[:, :-1].gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return torch.cat([taken.new_zeros(taken.shape[0], 1), taken], dim=1)


class PolicyWithValueHead(nn.Module):
    """A causal LM and a linear value head on its last hidden state (the critic;
    docs/guides/language-models.md). value_head=False: no critic is built (the group
    estimators), `value_head` is None and the values are 0."""

    def __init__(self, lm: Any, value_head: bool = True) -> None:
        super().__init__()
        self.lm = lm
        self.value_head: nn.Linear | None = None
        if value_head:
            hidden = getattr(lm.config, "hidden_size", None) or lm.config.n_embd
            self.value_head = nn.Linear(hidden, 1)
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)

    @property
    def config(self) -> Any:
        return self.lm.config

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> TokenTerms:
        """Log-probs of the given tokens, V(state before token j) and entropy at entry j."""
        out = self.lm(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids(attention_mask),
            output_hidden_states=self.value_head is not None,
            use_cache=False,
        )
        logits = out.logits.float()
        log_softmax = torch.log_softmax(logits, dim=-1)
        entropy = -(log_softmax.exp() * log_softmax).sum(-1)
        if self.value_head is None:
            values = logits.new_zeros(logits.shape[:2])
        else:
            values = self.value_head(out.hidden_states[-1].float()).squeeze(-1)
        return TokenTerms(gather_log_probs(logits, input_ids), _shift(values), _shift(entropy))


def frozen_copy(lm: Any) -> Any:
    """The reference policy: a copy of `lm`'s current weights that never trains."""
    reference = copy.deepcopy(lm)
    reference.eval()
    reference.requires_grad_(False)
    return reference


@torch.no_grad()
def reference_log_probs(reference: Any, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
    """log pi_ref(token j | tokens < j), (B, L)."""
    out = reference(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids(attention_mask),
        use_cache=False,
    )
    return gather_log_probs(out.logits, input_ids)

"""LoRA on the policy (peft): an adapter trains instead of the whole model, and the reference is
the same base model with the adapter off, so no second copy of the weights is kept.

The saved model is the adapter (adapter_config.json, adapter_model.safetensors) plus
`base_model.json`, a note of the base model folder it applies to.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .errors import LMTrainerError

BASE_NOTE = "base_model.json"


@dataclass(frozen=True)
class LoRASettings:
    """The adapter's shape: rank r, scale alpha (updates x alpha / r), dropout, and the names
    of the modules it wraps (suffixes of the model's module names, as peft matches them)."""

    rank: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ("c_attn",)

    def __post_init__(self) -> None:
        if not (isinstance(self.rank, int) and self.rank >= 1):
            raise LMTrainerError(f"lora rank must be an integer >= 1, got {self.rank!r}")
        if not self.target_modules:
            raise LMTrainerError("lora target_modules is empty; name at least one module")


def missing_modules(module_names: Iterable[str], targets: Iterable[str]) -> list[str]:
    """The targets no module name equals or ends with (`.<target>`), as peft matches them."""
    names = list(module_names)
    return [
        target
        for target in targets
        if not any(name == target or name.endswith(f".{target}") for name in names)
    ]


def leaf_names(module_names: Iterable[str]) -> list[str]:
    """The distinct last parts of dotted module names (what a user names as a target)."""
    return sorted({name.rsplit(".", 1)[-1] for name in module_names if name})


def apply_lora(lm: Any, settings: LoRASettings) -> Any:
    """`lm` wrapped by a fresh LoRA adapter (peft): only the adapter's weights train."""
    from peft import LoraConfig, get_peft_model

    names = [name for name, _ in lm.named_modules()]
    missing = missing_modules(names, settings.target_modules)
    if missing:
        raise LMTrainerError(
            f"lora target_modules {missing} are not modules of this "
            f"{type(lm).__name__}; its modules with weights are named "
            f"{leaf_names(n for n, m in lm.named_modules() if hasattr(m, 'weight'))}: "
            "name some of those (attention projections are usual)"
        )
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
        fan_in_fan_out=_stores_weights_in_by_out(lm, settings.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )
    try:
        with _peft_reading_deprecated_aliases():
            return get_peft_model(lm, config)
    except ValueError as error:  # a module peft cannot wrap (a layer norm, say)
        raise LMTrainerError(
            f"lora target_modules {list(settings.target_modules)}: {error}; name linear layers"
        ) from None


@contextmanager
def _peft_reading_deprecated_aliases() -> Iterator[None]:
    """peft reads transformers' deprecated `is_gradient_checkpointing` alias when it wraps and
    saves a model: nothing a user can act on, and it would break --quiet's one line."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
        )
        yield


def _stores_weights_in_by_out(lm: Any, targets: Iterable[str]) -> bool:
    """Whether the targeted layers are GPT-2's Conv1D, whose weight is (in, out): peft's
    `fan_in_fan_out`, stated rather than left for peft to correct with a warning."""
    from transformers.pytorch_utils import Conv1D

    wrapped = [
        module
        for name, module in lm.named_modules()
        if any(name == target or name.endswith(f".{target}") for target in targets)
    ]
    return bool(wrapped) and all(isinstance(module, Conv1D) for module in wrapped)


def is_lora(lm: Any) -> bool:
    return hasattr(lm, "disable_adapter") and hasattr(lm, "get_base_model")


class AdapterOffReference:
    """The reference policy as the LoRA model with its adapter off: the base weights, shared
    with the policy, never a copy. Called like a model (no gradients)."""

    def __init__(self, peft_model: Any) -> None:
        self.model = peft_model

    def __call__(self, **inputs: Tensor) -> Any:
        with torch.no_grad(), self.model.disable_adapter():
            return self.model(**inputs)

    def parameters(self) -> Any:
        return self.model.get_base_model().parameters()


def save_adapter(lm: Any, folder: Path, base_folder: str | Path) -> None:
    """The adapter's weights and config, and a note of the base model it applies to."""
    with _peft_reading_deprecated_aliases():
        lm.save_pretrained(folder)
    note = {"base_model": str(base_folder), "adapter": "peft LoRA", "files": "adapter_*"}
    (folder / BASE_NOTE).write_text(json.dumps(note, indent=2) + "\n")


def trainable_parameters(module: Any) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)

"""An LM spec's LoRA target modules checked against the policy's weights before it loads.

The module names come from the safetensors header (a JSON table of tensor names at the start
of the file): no weights are read and no model code runs.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from ppo_platform.errors import SpecIssue
from ppo_platform.spec.lm import LoRASpec

MAX_HEADER_BYTES = 64 * 2**20


def weight_module_names(folder: Path) -> list[str] | None:
    """The dotted names of the modules that hold weights (None: the header is unreadable)."""
    names: set[str] = set()
    for path in sorted(folder.glob("*.safetensors")):
        try:
            with path.open("rb") as handle:
                (size,) = struct.unpack("<Q", handle.read(8))
                if size > MAX_HEADER_BYTES:
                    return None
                header = json.loads(handle.read(size))
        except (OSError, struct.error, ValueError):
            return None
        names |= {key.rsplit(".", 1)[0] for key in header if key != "__metadata__"}
    return sorted(names) or None


def lora_target_issues(lora: LoRASpec, folder: Path) -> list[SpecIssue]:
    """A target that no module of the policy is named by (equal, or `.<target>` at the end, as
    peft matches), refused with the modules the model does have."""
    from ppo_platform.trainers.lm.lora import leaf_names, missing_modules

    modules = weight_module_names(folder)
    if modules is None:
        return []  # the loader reports the weights; the trainer checks again at load
    missing = missing_modules(modules, lora.target_modules)
    if not missing:
        return []
    leaves = leaf_names(modules)
    return [
        SpecIssue(
            path="lm.lora.target_modules",
            value=lora.target_modules,
            message=f"refused: the policy has no module named {', '.join(missing)}; LoRA "
            "would wrap nothing there.",
            fix=f"name modules the model has: {', '.join(leaves)} (attention projections are "
            "usual: c_attn for GPT-2, q_proj and v_proj for Llama).",
            rule="lora_target_missing",
        )
    ]

"""Base model of every spec section."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Unknown keys are errors, numbers must be finite, values are not coerced from strings."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class WholeSpec(StrictModel):
    """What every whole spec (gymnasium or language model) offers: its MLflow experiment name,
    its resolved data and its hash. `hashed` says which resolved data the hash covers."""

    if TYPE_CHECKING:  # fields of the subclasses
        name: str
        tracking: Any

    @property
    def experiment_name(self) -> str:
        return str(self.tracking.experiment or self.name)

    def resolved(self) -> dict[str, Any]:
        """Every field with its default filled in, as plain JSON-able data."""
        return self.model_dump(mode="json", by_alias=True)

    def hashed(self) -> dict[str, Any]:
        """The resolved spec without its search sections: they describe other runs, not this
        one's hyperparameters."""
        return {k: v for k, v in self.resolved().items() if k not in ("sweep", "tune")}

    def spec_hash(self) -> str:
        """Stable hash of the resolved spec: identical hyperparameters, identical hash."""
        canonical = json.dumps(self.hashed(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

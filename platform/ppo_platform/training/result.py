"""How a training run ended: `RunResult`, its outcome and the MLflow status it maps to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Outcome = Literal["completed", "stopped_by_alert", "cancelled"]
MLFLOW_STATUS = {"completed": "FINISHED", "stopped_by_alert": "FAILED", "cancelled": "KILLED"}


@dataclass(frozen=True)
class RunResult:
    """How a training run ended."""

    run_id: str
    outcome: Outcome
    timesteps: int
    final_eval_mean: float | None
    final_eval_std: float | None
    alerts: int
    seconds: float
    message: str = ""
    tracking_seconds: float = 0.0  # wall time spent writing to MLflow during training
    alert_summary: tuple[str, ...] = ()  # one line per signal that alerted
    top_cause: str = ""  # the doctor's most likely cause, as one line ("": none found)

    @property
    def status(self) -> str:
        """The MLflow run status: FINISHED, FAILED or KILLED."""
        return MLFLOW_STATUS[self.outcome]

    def summary(self) -> str:
        score = (
            "-"
            if self.final_eval_mean is None
            else f"{self.final_eval_mean:.2f} +- {self.final_eval_std:.2f}"
        )
        text = (
            f"{self.outcome}: run {self.run_id}, {self.timesteps} env steps in "
            f"{self.seconds:.1f} s, final eval return {score}, {self.alerts} alert(s)"
        )
        lines = [text, *(f"  {line}" for line in self.alert_summary)]
        if self.top_cause:
            lines.append(f"  doctor: {self.top_cause} (ppo-platform doctor {self.run_id})")
        if self.message:
            lines.append(self.message)
        return "\n".join(lines)

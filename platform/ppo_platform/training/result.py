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
    language_model: bool = False  # ppo_lm: `timesteps` counts updates, the eval is a reward

    @property
    def status(self) -> str:
        """The MLflow run status: FINISHED, FAILED or KILLED."""
        return MLFLOW_STATUS[self.outcome]

    def summary(self) -> str:
        score = "-" if self.final_eval_mean is None else f"{self.final_eval_mean:.2f}"
        if self.final_eval_mean is not None and self.final_eval_std is not None:
            score += f" +- {self.final_eval_std:.2f}"  # only where there is a spread
        done, scored = (
            (f"{self.timesteps} updates", "final eval reward")
            if self.language_model
            else (f"{self.timesteps} env steps", "final eval return")
        )
        text = (
            f"{self.outcome}: run {self.run_id}, {done} in "
            f"{self.seconds:.1f} s, {scored} {score}, {self.alerts} alert(s)"
        )
        lines = [text, *(f"  {line}" for line in self.alert_summary)]
        if self.message:
            lines.append(self.message)
        return "\n".join(lines)

"""How a training run ended: `RunResult`, its outcome and the MLflow status it maps to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ppo_platform.tracking import tags as tag

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
    top_cause: str = ""  # the doctor's most likely cause ("": none found)
    top_cause_line: str = ""  # ... as one line: confidence, where, advice, patch
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
        if self.top_cause_line:
            lines.append(f"  doctor: {self.top_cause_line} (ppo-platform doctor {self.run_id})")
        if self.message:
            lines.append(self.message)
        return "\n".join(lines)


def closing_tags(
    outcome: Outcome, alerts: int, top_cause: str, final_eval: float | None, message: str
) -> dict[str, str]:
    """The tags a run closes with: its outcome, alert count, the doctor's top cause ("" none),
    its final evaluation and why it stopped early."""
    tags = {tag.OUTCOME: outcome, tag.ALERTS_TOTAL: str(alerts), tag.TOP_CAUSE: top_cause}
    if final_eval is not None:
        tags[tag.FINAL_EVAL_MEAN] = f"{final_eval:.4f}"
    if message:
        tags[tag.STOP_REASON] = message
    return tags

"""The low-clip-fraction rule on real CartPole updates: not judged once the LR has annealed to
near zero, still judged at the same tiny LR when that LR is the run's peak."""

from __future__ import annotations

from collections.abc import Callable

from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.health import Alert, DiagnosticsMonitor, Thresholds
from ppo_platform.health.thresholds import ANNEALED_FRACTION
from ppo_platform.trainers.ppo import PlatformPPO

PEAK_LR, TINY_LR, STEPS_PER_UPDATE = 3e-3, 1e-6, 64
THRESHOLDS = Thresholds(window=3)


def annealed(progress_remaining: float) -> float:
    """Full LR at the start, linear to TINY_LR by 60% of the run, then held there."""
    return max(TINY_LR, PEAK_LR * (progress_remaining - 0.4) / 0.6)


def train(learning_rate: float | Callable[[float], float], updates: int) -> tuple[list, list]:
    """A real seeded run; per update (learning rate, clip fraction) and the monitor's alerts."""
    monitor = DiagnosticsMonitor(THRESHOLDS, total_timesteps=updates * STEPS_PER_UPDATE)
    rows: list[tuple[float, float]] = []
    alerts: list[Alert] = []

    def listener(model: PlatformPPO, metrics: dict[str, float]) -> None:
        rows.append((metrics["train/learning_rate"], metrics["train/clip_fraction"]))
        alerts.extend(monitor.check(len(rows), model.num_timesteps, metrics))

    model = PlatformPPO(
        "MlpPolicy",
        make_vec_env("CartPole-v1", n_envs=1, seed=0),
        n_steps=STEPS_PER_UPDATE,
        batch_size=16,
        n_epochs=10,
        clip_range=0.03,  # small: at the full LR the clip fraction is well above 0.01
        learning_rate=learning_rate,
        policy_kwargs={"net_arch": [32]},
        seed=0,
        device="cpu",
        update_listeners=[listener],
    )
    model.learn(updates * STEPS_PER_UPDATE)
    return rows, alerts


def test_low_clip_fraction_in_the_annealed_tail_of_a_real_run_raises_no_alert() -> None:
    rows, alerts = train(annealed, updates=16)
    tail = [i for i, (lr, _) in enumerate(rows, 1) if lr < ANNEALED_FRACTION * PEAK_LR]
    # At the tiny LR it clips nothing for more than a window of updates: the rule before
    # (judged whatever the LR) alerted here.
    held = [clip for lr, clip in rows if lr == TINY_LR]
    assert len(held) > THRESHOLDS.window
    assert all(clip < THRESHOLDS.clip_fraction_low for clip in held)
    late = [a for a in alerts if a.signal == "clip_fraction_low" and a.update >= tail[0]]
    assert late == []


def test_the_same_tiny_lr_as_the_run_s_peak_still_raises_the_low_clip_warning() -> None:
    rows, alerts = train(TINY_LR, updates=THRESHOLDS.window + 1)
    assert all(clip < THRESHOLDS.clip_fraction_low for _, clip in rows)
    [alert] = [a for a in alerts if a.signal == "clip_fraction_low"]
    assert (alert.update, alert.severity) == (THRESHOLDS.window, "warning")

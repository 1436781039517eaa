"""The diagnostics monitor on synthetic update metrics: thresholds, windows, advice."""

from __future__ import annotations

from ppo_platform.health import (
    Alert,
    DiagnosticsMonitor,
    Thresholds,
    explained_variance_informative,
)


def metrics(
    kl: float = 0.01, clip: float = 0.2, ev: float = 0.5, clip_range: float = 0.2
) -> dict[str, float]:
    return {
        "train/approx_kl": kl,
        "train/approx_kl_post": kl,
        "train/clip_fraction": clip,
        "train/explained_variance": ev,
        "train/clip_range": clip_range,
    }


def test_healthy_update_raises_no_alert() -> None:
    monitor = DiagnosticsMonitor(Thresholds(), total_timesteps=1000)
    assert monitor.check(1, 100, metrics()) == []


def test_kl_above_alert_threshold_is_critical_with_lessons_advice() -> None:
    monitor = DiagnosticsMonitor(Thresholds(kl_alert=0.1), total_timesteps=1000)
    [alert] = monitor.check(3, 300, metrics(kl=0.15))
    assert (alert.signal, alert.update, alert.timestep) == ("approx_kl", 3, 300)
    assert (alert.value, alert.threshold, alert.severity) == (0.15, 0.1, "critical")
    assert "lower K" in alert.advice and "learning rate" in alert.advice


def test_kl_exactly_at_threshold_is_not_an_alert() -> None:
    monitor = DiagnosticsMonitor(Thresholds(kl_alert=0.1), total_timesteps=1000)
    assert monitor.check(1, 100, metrics(kl=0.1)) == []


def test_alert_fires_once_while_signal_stays_high_and_again_after_recovery() -> None:
    monitor = DiagnosticsMonitor(Thresholds(window=2), total_timesteps=1000)
    fired = [
        len(monitor.check(i, i * 10, metrics(kl=kl)))
        for i, kl in enumerate([0.2, 0.3, 0.25, 0.01, 0.01, 0.5], start=1)
    ]
    assert fired == [1, 0, 0, 0, 0, 1]
    assert monitor.counts["approx_kl"] == 2


def test_a_flapping_signal_is_one_alert_episode() -> None:
    monitor = DiagnosticsMonitor(Thresholds(window=3), total_timesteps=1000)
    kls = [0.2, 0.01, 0.3, 0.01, 0.01, 0.25, 0.01]  # never healthy for 3 updates in a row
    fired = [len(monitor.check(i, 100 * i, metrics(kl=kl))) for i, kl in enumerate(kls, 1)]
    assert fired == [1, 0, 0, 0, 0, 0, 0]
    [summary] = monitor.summary()
    assert summary["signal"] == "approx_kl" and summary["episodes"] == 1
    assert (summary["first_step"], summary["last_step"], summary["worst"]) == (100, 600, 0.3)
    assert "lower K" in str(summary["advice"])


def test_signal_re_arms_only_after_window_healthy_updates() -> None:
    monitor = DiagnosticsMonitor(Thresholds(window=2), total_timesteps=1000)
    kls = [0.2, 0.01, 0.01, 0.4, 0.01, 0.15]
    fired = [len(monitor.check(i, 10 * i, metrics(kl=kl))) for i, kl in enumerate(kls, 1)]
    assert fired == [1, 0, 0, 1, 0, 0]
    [summary] = monitor.summary()
    assert (summary["episodes"], summary["first_step"], summary["last_step"]) == (2, 10, 60)
    assert summary["worst"] == 0.4


def test_sustained_signal_summary_reports_the_lowest_explained_variance() -> None:
    monitor = DiagnosticsMonitor(Thresholds(window=2, late_fraction=0.0), total_timesteps=100)
    for i, ev in enumerate([-0.5, -2.0, -0.1, 0.5, -3.0], start=1):
        monitor.check(i, i, metrics(ev=ev))
    [summary] = monitor.summary()
    assert (summary["episodes"], summary["worst"], summary["last_step"]) == (1, -3.0, 5)
    assert "explained_variance" in monitor.summary_lines()[0]


def spread(std: float, rms: float, ev: float) -> dict[str, float]:
    return {**metrics(ev=ev), "train/returns_std": std, "train/returns_rms": rms}


def test_explained_variance_of_near_constant_returns_is_not_judged() -> None:
    # A solved CartPole rollout: returns ~50 +- 0.5; EV swings on tiny absolute errors.
    thresholds = Thresholds(window=2, late_fraction=0.0)
    monitor = DiagnosticsMonitor(thresholds, total_timesteps=100)
    alerts = [monitor.check(i, i, spread(0.5, 50.0, -10.0)) for i in range(1, 6)]
    assert alerts == [[], [], [], [], []]
    assert explained_variance_informative(spread(0.5, 50.0, -10.0), thresholds) is False


def test_explained_variance_of_varying_returns_is_judged_at_any_reward_scale() -> None:
    thresholds = Thresholds(window=2, late_fraction=0.0)
    for scale in (1.0, 1e4):
        monitor = DiagnosticsMonitor(thresholds, total_timesteps=100)
        monitor.check(1, 1, spread(15.0 * scale, 40.0 * scale, -0.2))
        [alert] = monitor.check(2, 2, spread(15.0 * scale, 40.0 * scale, -0.2))
        assert alert.signal == "explained_variance"


def test_a_fixed_value_scale_sets_the_variance_floor() -> None:
    thresholds = Thresholds(return_variance_floor=0.01, value_scale=5.0)
    assert explained_variance_informative(spread(0.6, 50.0, 0.0), thresholds) is True
    assert explained_variance_informative(spread(0.4, 50.0, 0.0), thresholds) is False


def test_uninformative_updates_break_an_explained_variance_streak() -> None:
    monitor = DiagnosticsMonitor(Thresholds(window=2, late_fraction=0.0), total_timesteps=100)
    readings = [spread(15.0, 40.0, -1.0), spread(0.1, 50.0, -1.0), spread(15.0, 40.0, -1.0)]
    assert [monitor.check(i, i, m) for i, m in enumerate(readings, 1)] == [[], [], []]


def test_kl_alert_reads_the_post_update_kl_by_default() -> None:
    monitor = DiagnosticsMonitor(Thresholds(kl_alert=0.1), total_timesteps=1000)
    [alert] = monitor.check(1, 1, {"train/approx_kl": 0.0, "train/approx_kl_post": 0.2})
    assert alert.value == 0.2 and "(post-update)" in alert.message


def test_kl_alert_reads_the_minibatch_kl_when_asked() -> None:
    monitor = DiagnosticsMonitor(Thresholds(kl_source="minibatch"), total_timesteps=1000)
    assert monitor.check(1, 1, {"train/approx_kl": 0.0, "train/approx_kl_post": 0.2}) == []
    [alert] = monitor.check(2, 2, {"train/approx_kl": 0.3, "train/approx_kl_post": 0.0})
    assert alert.value == 0.3


def test_clip_fraction_at_high_threshold_is_critical_when_the_kl_confirms_it() -> None:
    monitor = DiagnosticsMonitor(Thresholds(clip_fraction_high=0.5), total_timesteps=1000)
    [alert] = monitor.check(1, 10, metrics(clip=0.5, kl=0.05))  # above kl_healthy_max 0.02
    assert alert.signal == "clip_fraction_high" and alert.severity == "critical"
    assert alert.advice == "lower the learning rate or K"


def test_a_high_clip_fraction_with_a_healthy_kl_is_no_alert() -> None:
    # The zoo's HalfCheetah entry (clip 0.1, 20 epochs): clip fraction 0.45-0.59 at a KL of
    # 0.012-0.018 for the whole run while its return climbs at every evaluation.
    monitor = DiagnosticsMonitor(Thresholds(window=3), total_timesteps=1000)
    for update, clip in enumerate([0.511, 0.52, 0.59, 0.45, 0.48, 0.55]):
        assert (
            monitor.check(update, 10 * update, metrics(clip=clip, kl=0.016, clip_range=0.1)) == []
        )
    # The same clip fraction once the KL leaves its healthy range is critical.
    [alert] = monitor.check(7, 70, metrics(clip=0.52, kl=0.03, clip_range=0.1))
    assert (alert.signal, alert.severity) == ("clip_fraction_high", "critical")


def test_low_clip_fraction_is_not_judged_once_the_lr_has_annealed() -> None:
    monitor = DiagnosticsMonitor(Thresholds(window=2), total_timesteps=1000)
    lrs = [1e-4, 8e-5, 5e-5, 2e-5, 9e-6, 1e-6, 0.0]  # linear decay: the last three are < 10%
    fired = [
        monitor.check(
            i, 10 * i, {**metrics(clip=0.2 if lr > 1e-5 else 0.0), "train/learning_rate": lr}
        )
        for i, lr in enumerate(lrs)
    ]
    assert all(alerts == [] for alerts in fired)
    # A clip fraction of 0 at a full LR is still too timid.
    monitor.check(8, 80, {**metrics(clip=0.0), "train/learning_rate": 1e-4})
    [alert] = monitor.check(9, 90, {**metrics(clip=0.0), "train/learning_rate": 1e-4})
    assert alert.signal == "clip_fraction_low"


def test_without_the_kl_rule_a_high_clip_fraction_is_always_critical() -> None:
    monitor = DiagnosticsMonitor(Thresholds(clip_fraction_needs_kl=False), total_timesteps=1000)
    [alert] = monitor.check(1, 10, metrics(clip=0.52, kl=0.016))
    assert alert.severity == "critical"


def test_clip_fraction_above_drift_level_for_window_updates_is_drift() -> None:
    monitor = DiagnosticsMonitor(
        Thresholds(drift_clip_fraction=0.4, window=3), total_timesteps=1000
    )
    checks = [monitor.check(i, i, metrics(clip=0.45, kl=0.05)) for i in range(1, 5)]
    assert [[a.signal for a in c] for c in checks] == [[], [], ["clip_fraction_drift"], []]
    assert checks[2][0].severity == "critical"
    assert "drifting" in monitor.alerts[0].message


def test_drift_window_restarts_after_a_healthy_update() -> None:
    monitor = DiagnosticsMonitor(Thresholds(window=3), total_timesteps=1000)
    values = [0.45, 0.45, 0.2, 0.45, 0.45]
    fired = [monitor.check(i, i, metrics(clip=v, kl=0.05)) for i, v in enumerate(values)]
    assert all(alerts == [] for alerts in fired)


def test_near_zero_clip_fraction_sustained_is_a_warning_to_raise_lr_or_k() -> None:
    monitor = DiagnosticsMonitor(Thresholds(clip_fraction_low=0.01, window=2), total_timesteps=1000)
    monitor.check(1, 1, metrics(clip=0.0))
    [alert] = monitor.check(2, 2, metrics(clip=0.001))
    assert (alert.signal, alert.severity) == ("clip_fraction_low", "warning")
    assert alert.advice == "raise the learning rate or K"


def test_clip_fraction_is_ignored_once_the_clip_range_has_decayed_to_zero() -> None:
    monitor = DiagnosticsMonitor(Thresholds(), total_timesteps=1000)
    assert monitor.check(1, 999, metrics(clip=1.0, clip_range=0.0)) == []


def test_explained_variance_only_alerts_late_in_training() -> None:
    monitor = DiagnosticsMonitor(Thresholds(window=2, late_fraction=0.5), total_timesteps=1000)
    early = [monitor.check(i, 100 * i, metrics(ev=-0.5)) for i in (1, 2, 3)]
    late = [monitor.check(i, 500 + i, metrics(ev=-0.5)) for i in (4, 5)]
    assert early == [[], [], []]
    assert [a.signal for a in late[1]] == ["explained_variance"]
    assert late[1][0].severity == "warning"


def test_monitor_ignores_signals_that_are_switched_off() -> None:
    monitor = DiagnosticsMonitor(
        Thresholds(monitor_kl=False, monitor_clip_fraction=False), total_timesteps=1000
    )
    assert monitor.check(1, 1, metrics(kl=5.0, clip=0.9)) == []


def test_missing_signals_raise_nothing() -> None:
    monitor = DiagnosticsMonitor(Thresholds(), total_timesteps=1000)
    assert monitor.check(1, 1, {"train/value_loss": 3.0}) == []


def test_critical_count_counts_only_critical_alerts() -> None:
    monitor = DiagnosticsMonitor(Thresholds(window=1), total_timesteps=10)
    monitor.check(1, 9, metrics(kl=0.5, clip=0.0, ev=-1.0))
    assert sorted(a.signal for a in monitor.alerts) == [
        "approx_kl",
        "clip_fraction_low",
        "explained_variance",
    ]
    assert monitor.critical_count == 1


def test_alert_serializes_every_field() -> None:
    monitor = DiagnosticsMonitor(Thresholds(), total_timesteps=1000)
    [alert] = monitor.check(7, 70, metrics(kl=0.2))
    assert set(alert.to_dict()) == {
        "update",
        "timestep",
        "signal",
        "value",
        "threshold",
        "severity",
        "message",
        "advice",
    }
    assert alert.format().startswith("[critical] update 7 (step 70): approx KL 0.2000")


# Logged by the planner's HalfCheetah-v5 spec (1 x 512, K 10, LR 5e-5, clip 0.2), updates 1-30
# of benchmarks/learning/sample_efficiency.py: (clip fraction, post-update KL); its return
# climbed at every evaluation (119, 1515, 2101 at 10k, 20k, 30k env steps).
HALFCHEETAH_PLANNED = [
    (0.371, 0.0383), (0.326, 0.0379), (0.305, 0.0403), (0.343, 0.047), (0.346, 0.0427),
    (0.34, 0.0446), (0.377, 0.0461), (0.346, 0.0575), (0.359, 0.0467), (0.399, 0.0624),
    (0.362, 0.0488), (0.415, 0.0629), (0.351, 0.0501), (0.379, 0.0539), (0.401, 0.0646),
    (0.415, 0.0652), (0.422, 0.0514), (0.442, 0.0495), (0.396, 0.0428), (0.445, 0.0658),
    (0.387, 0.0617), (0.457, 0.0563), (0.414, 0.0568), (0.404, 0.0528), (0.394, 0.0405),
    (0.39, 0.0398), (0.424, 0.0462), (0.43, 0.0479), (0.419, 0.0497), (0.405, 0.0423),
]  # fmt: skip


def _replay(thresholds: Thresholds) -> list[Alert]:
    monitor = DiagnosticsMonitor(thresholds, total_timesteps=100_000)
    for update, (clip, kl) in enumerate(HALFCHEETAH_PLANNED, start=1):
        monitor.check(update, 512 * update, metrics(clip=clip, kl=kl, clip_range=0.2))
    return monitor.alerts


def test_a_known_good_mujoco_run_alerts_only_under_the_generic_kl_band() -> None:
    # The lessons' healthy KL (0.02): every update judges the clip fraction; drift fires.
    [alert] = _replay(Thresholds(window=3))
    assert (alert.signal, alert.severity, alert.timestep) == (
        "clip_fraction_drift",
        "critical",
        8704,
    )
    # The planner's band for simulators (0.07): nothing to report, the KL alert still armed.
    assert _replay(Thresholds(window=3, kl_healthy_max=0.07)) == []

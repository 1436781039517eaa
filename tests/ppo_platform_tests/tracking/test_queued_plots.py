"""A run's plot is drawn before its close is answered, so the run a caller gets back is whole; a
deferred plot (a sweep's warm worker) is drawn after its close is answered (the worker goes on
to its next run), from the series it had then, and always before the tracking process lets its
caller go."""

from __future__ import annotations

from pathlib import Path

from mlflow.tracking import MlflowClient

from ppo_platform.settings import get_settings
from ppo_platform.tracking.service import MAX_QUEUED_PLOTS, TrackingService

ROWS = [["train/approx_kl", 0.01 * step, 0, step] for step in range(1, 40)]


def _train_a_run(
    service: TrackingService, seq: int, folder: Path, deferred: bool = True
) -> tuple[str, Path]:
    """Open a run, write its rows, queue its plot and close it: what a finishing run sends."""
    uri = get_settings().tracking_uri
    opened = service.handle(
        {"op": "open", "seq": seq, "uri": uri, "experiment": "plots", "tags": {}}
    )
    assert "error" not in opened, opened
    assert "error" not in service.handle({"op": "rows", "seq": seq + 1, "run": seq, "rows": ROWS})
    path = folder / f"curves-{seq}.png"
    plot = {"op": "plot", "seq": seq + 2, "run": seq, "path": str(path), "title": "t"}
    assert "error" not in service.handle({**plot, "kl_alert": 0.1, "deferred": deferred})
    finish = {"op": "finish", "seq": seq + 3, "run": seq, "status": "FINISHED", "tags": {}}
    assert "error" not in service.handle(finish)
    return opened["run_id"], path


def _plots_of(run_id: str) -> list[str]:
    client = MlflowClient(get_settings().tracking_uri)
    return [a.path for a in client.list_artifacts(run_id, "plots")]


def test_a_plot_not_deferred_is_stored_before_its_runs_close_is_answered(
    platform_home: Path, tmp_path: Path
) -> None:
    service = TrackingService()
    run_id, path = _train_a_run(service, 1, tmp_path, deferred=False)
    assert path.stat().st_size > 10_000
    assert _plots_of(run_id) == [f"plots/{path.name}"]
    assert service.draw_plot() is False  # nothing was queued


def test_a_deferred_plot_is_drawn_when_idle_after_its_runs_close_is_answered(
    platform_home: Path, tmp_path: Path
) -> None:
    service = TrackingService()
    run_id, path = _train_a_run(service, 1, tmp_path)
    client = MlflowClient(get_settings().tracking_uri)
    assert client.get_run(run_id).info.status == "FINISHED"
    assert not path.exists() and _plots_of(run_id) == []  # queued, not drawn yet
    assert service.draw_plot() is True
    assert path.stat().st_size > 10_000
    assert _plots_of(run_id) == [f"plots/{path.name}"]
    assert service.draw_plot() is False  # nothing left


def test_queued_plots_are_bounded_and_all_drawn_when_the_caller_goes(
    platform_home: Path, tmp_path: Path
) -> None:
    service = TrackingService()
    runs = [_train_a_run(service, 10 * (i + 1), tmp_path) for i in range(MAX_QUEUED_PLOTS + 1)]
    first_id, first_path = runs[0]
    assert first_path.exists() and _plots_of(first_id) == [f"plots/{first_path.name}"]
    assert not any(path.exists() for _, path in runs[1:])
    service.abandon()  # the caller's input ended
    for run_id, path in runs:
        assert path.exists() and _plots_of(run_id) == [f"plots/{path.name}"]

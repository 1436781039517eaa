"""`ppo-platform compare`: runs, sweeps or studies from the store, grouped and compared with
IQM, bootstrap intervals and verdicts (docs/guides/comparing-runs.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ppo_platform.cli.output import fail
from ppo_platform.errors import PlatformError

Ids = Annotated[
    list[str],
    typer.Argument(
        help="MLflow run ids: training runs, sweep parents, study parents or trials.",
        show_default=False,
    ),
]
By = Annotated[str, typer.Option(help="Group by: variant, spec (the spec hash) or tag:KEY.")]
Metric = Annotated[str, typer.Option(help="The score: a metric's latest value in each run.")]
Baseline = Annotated[
    str | None, typer.Option(help="Compare every group with this one (default: every pair).")
]
Threshold = Annotated[
    float | None,
    typer.Option(
        help="Score that counts as solved, for the solve rate (default: the sweep's, else "
        "gymnasium's reward_threshold)."
    ),
]
Seed = Annotated[int, typer.Option(help="Seed of the bootstrap.")]
Out = Annotated[
    Path | None,
    typer.Option(
        help="Folder for comparison.md, comparison.json and the plots "
        "[default: PPO_PLATFORM_OUTPUTS_DIR or ./outputs, then compare-<first id>].",
        show_default=False,
    ),
]
AsJson = Annotated[
    bool, typer.Option("--json", help="Print the comparison as JSON instead of a table.")
]


def compare(
    ids: Ids,
    by: By = "variant",
    metric: Metric = "eval/mean_reward",
    baseline: Baseline = None,
    threshold: Threshold = None,
    seed: Seed = 0,
    out: Out = None,
    as_json: AsJson = False,
) -> None:
    """Compare runs, sweeps or studies: IQM with 95% intervals and a verdict per pair."""
    from ppo_platform.reports.compare import compare_runs
    from ppo_platform.reports.compare_render import render_comparison, write_comparison
    from ppo_platform.settings import get_settings

    settings = get_settings()
    try:
        comparison = compare_runs(
            ids,
            settings.tracking_uri,
            metric=metric,
            by=by,
            baseline=baseline,
            threshold=threshold,
            seed=seed,
        )
        # The ids are checked run ids by now: the first one names the default folder.
        folder = out if out is not None else settings.outputs_dir / f"compare-{ids[0][:8]}"
        files = write_comparison(comparison, folder)
    except PlatformError as error:
        fail(error)
    if as_json:
        typer.echo(json.dumps(comparison.to_json(), indent=2))
    else:
        typer.echo(render_comparison(comparison))
    typer.echo(f"comparison files: {files[0].parent}", err=as_json)


def register(app: typer.Typer) -> None:
    """Add `compare` to the CLI."""
    app.command()(compare)

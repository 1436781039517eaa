"""The `ppo-platform` command line, commands by group.

`app` holds the training commands (validate, run, plan, sweep, tune, schema, ...),
`interop_commands` import-zoo, `service_commands` serve/keys and the REST client commands
(through `http_client`), `output` the shared printing and exit helpers.
"""

from ppo_platform.cli.early_start import start_tracking_early

start_tracking_early()  # `run`: before the imports below

from ppo_platform.cli.app import EXIT_BAD_INPUT, EXIT_OK, app, main  # noqa: E402

__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "app", "main"]

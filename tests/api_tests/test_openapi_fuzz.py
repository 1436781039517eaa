"""The OpenAPI document, fuzzed by schemathesis with every check (`--checks all`: positive data
accepted, negative data rejected, status codes, content types, headers and bodies as
documented, `Allow` on a 405, ...) against the real server: it reports nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES_PER_OPERATION = 25


def test_schemathesis_with_every_check_reports_nothing(
    server, keys, tmp_path, alice, post_spec, tiny, wait
) -> None:
    # The operations on one experiment are fuzzed on a finished run of alice's (with events,
    # metrics and files), not only on ids that do not exist.
    finished = wait(alice, post_spec(alice, tiny(512, name="fuzzed")).json()["id"])
    assert finished["status"] == "succeeded", finished["error"]
    config = tmp_path / "schemathesis.toml"
    config.write_text(f'{CONFIG.read_text()}\n[parameters]\nexperiment_id = "{finished["id"]}"\n')
    schemathesis = Path(sys.executable).with_name("schemathesis")
    command = [
        str(schemathesis),
        "--no-color",
        "--config-file",
        str(config),
        "run",
        f"{server.url}/openapi.json",
        "--checks",
        "all",
        "--header",
        f"Authorization: Bearer {keys['alice']}",
        "--max-examples",
        str(EXAMPLES_PER_OPERATION),
        "--seed",
        "24",
        "--workers",
        "1",
        "--generation-database",
        "none",
        "--request-timeout",
        "60",
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, timeout=1800, check=False
    )
    printed = result.stdout + result.stderr
    print(printed[-2500:])  # the summary, shown with `pytest -s`
    assert result.returncode == 0, printed[-20000:]
    selected = re.search(r"Selected: (\d+)/(\d+)", printed)
    assert selected and selected[1] == selected[2], printed[-3000:]  # every operation
    assert f"Tested: {selected[1]}" in printed and "Failures:" not in printed, printed[-3000:]

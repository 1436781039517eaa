"""`ppo-platform import-zoo` through the CLI: exit codes, printed spec, --out and --force."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.errors import EXIT_BAD_INPUT, EXIT_OK
from ppo_platform.spec.loader import load_spec

ZOO = Path(__file__).resolve().parents[2] / "fixtures" / "zoo_ppo.yml"
runner = CliRunner()


def test_prints_a_spec_that_validates(tmp_path):
    result = runner.invoke(app, ["import-zoo", str(ZOO), "CartPole-v1"])
    assert result.exit_code == EXIT_OK, result.output
    assert "name: cartpole-v1-zoo" in result.stdout
    path = tmp_path / "spec.yaml"
    path.write_text(result.stdout)
    assert load_spec(path).update.epochs == 20


def test_out_writes_the_file_and_refuses_to_overwrite(tmp_path):
    out = tmp_path / "pendulum.yaml"
    first = runner.invoke(app, ["import-zoo", str(ZOO), "Pendulum-v1", "--out", str(out)])
    assert first.exit_code == EXIT_OK, first.output
    assert f"wrote {out}" in first.stdout
    assert load_spec(out).policy.use_sde is True
    again = runner.invoke(app, ["import-zoo", str(ZOO), "Pendulum-v1", "--out", str(out)])
    assert again.exit_code == EXIT_BAD_INPUT
    assert "refusing to overwrite" in again.output
    forced = runner.invoke(
        app, ["import-zoo", str(ZOO), "Pendulum-v1", "--out", str(out), "--force"]
    )
    assert forced.exit_code == EXIT_OK


def test_refused_entry_exits_2_with_the_rule():
    result = runner.invoke(app, ["import-zoo", str(ZOO), "HalfCheetahBulletEnv-v0"])
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.output.startswith("refused:")
    assert "clip epsilon 0.4 is above the limit of 0.3" in result.output
    assert "Traceback" not in result.output


def test_unexpressible_entry_exits_2_naming_the_key():
    result = runner.invoke(app, ["import-zoo", str(ZOO), "CarRacing-v3"])
    assert result.exit_code == EXIT_BAD_INPUT
    assert "env_wrapper = [{'rl_zoo3.wrappers.FrameSkip': {'skip': 2}}" in result.output
    assert "rl_zoo3.wrappers.FrameSkip is not in the platform's wrapper vocabulary" in (
        result.output
    )


def test_missing_file_and_unknown_entry_exit_2(tmp_path):
    missing = runner.invoke(app, ["import-zoo", str(tmp_path / "nope.yml"), "CartPole-v1"])
    assert missing.exit_code == EXIT_BAD_INPUT
    assert "cannot read the hyperparameter file" in missing.output
    unknown = runner.invoke(app, ["import-zoo", str(ZOO), "Pendulum-v0"])
    assert unknown.exit_code == EXIT_BAD_INPUT
    assert "did you mean Pendulum-v1" in unknown.output


def test_note_on_the_effective_minibatch_goes_to_stderr():
    result = runner.invoke(app, ["import-zoo", str(ZOO), "MountainCarContinuous-v0"])
    assert result.exit_code == EXIT_OK, result.output
    assert "note: batch_size 256 is larger than the rollout" in result.stderr


# Run in a process where mujoco and Box2D cannot be imported, as on a machine without the
# `mujoco` and `box2d` extras (None in sys.modules: find_spec finds nothing, import fails).
WITHOUT_EXTRAS = """
import json, sys
sys.modules["mujoco"] = sys.modules["Box2D"] = None
from typer.testing import CliRunner
from ppo_platform.cli import app
from ppo_platform.spec.loader import load_spec_text
answers = {}
for entry in sys.argv[2:]:
    result = CliRunner().invoke(app, ["import-zoo", sys.argv[1], entry])
    spec = load_spec_text(result.stdout, entry) if result.exit_code == 0 else None
    answers[entry] = [result.exit_code, result.stderr, spec.env.id if spec else None]
print(json.dumps(answers))
"""


def test_mujoco_and_box2d_entries_convert_without_their_extras():
    import json
    import subprocess
    import sys

    entries = {"HalfCheetah-v4": "mujoco", "Hopper-v4": "mujoco", "Swimmer-v4": "mujoco",
               "LunarLander-v3": "box2d"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, str(ZOO), *entries],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    for entry, extra in entries.items():
        code, stderr, env_id = answers[entry]
        assert code == EXIT_OK, (entry, stderr)
        assert env_id and env_id.split("-v")[0] == entry.split("-v")[0]
        assert f"pip install 'ppo-platform[{extra}]'" in stderr, (entry, stderr)
        assert "cannot be created on this machine" in stderr

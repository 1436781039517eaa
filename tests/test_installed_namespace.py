"""One installed namespace: the wheel holds `ppo_platform` only, its `trainers` and `api` as
sub-packages (the folders trainers/ and api/ linked into platform/ppo_platform); a fresh venv
with the wheel cannot `import trainers` or `import api`."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(REPO_ROOT)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    (found,) = out.glob("ppo_platform-*.whl")
    return found


def test_the_wheel_installs_one_top_level_package_with_trainers_and_api_inside(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {
        "ppo_platform",
        "ppo_platform-0.1.0.dist-info",
    }
    assert "ppo_platform/trainers/ppo.py" in names
    assert "ppo_platform/trainers/lm/trainer.py" in names
    assert "ppo_platform/api/app.py" in names
    assert "ppo_platform/api/dashboard/templates/base.html" in names  # package data kept
    assert "ppo_platform/jobs/migrations/script.py.mako" in names
    # each source file once: the links are followed, not copied beside their targets
    assert len(names) == len(set(names))


def test_a_fresh_venv_with_the_wheel_imports_ppo_platform_and_not_trainers_or_api(
    wheel: Path, tmp_path: Path
):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    zipfile.ZipFile(wheel).extractall(site)  # what pip does for a pure wheel, without pip

    def imports(module: str) -> subprocess.CompletedProcess[str]:
        code = f"import importlib.util as u; print(u.find_spec({module!r}) is not None)"
        return subprocess.run(
            [str(python), "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True
        )

    assert imports("ppo_platform.trainers.ppo").stdout.strip() == "True"
    assert imports("ppo_platform.api.app").stdout.strip() == "True"
    assert imports("trainers").stdout.strip() == "False"
    assert imports("api").stdout.strip() == "False"

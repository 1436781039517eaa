"""The compiled programs' cache folder: a cache entry is code the process runs, so a folder
another user owns or may write to, or a link, is refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("jax")

from ppo_platform.trainers.compiled.cache import unsafe_folder, use_compilation_cache


def test_a_private_folder_of_this_user_is_used(tmp_path: Path) -> None:
    folder = tmp_path / "xla"
    assert use_compilation_cache(folder)
    assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700
    assert unsafe_folder(folder) is None


def test_a_folder_others_may_write_to_is_refused_naming_the_fix(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    assert not use_compilation_cache(folder)
    said = capsys.readouterr().err
    assert f"{folder} is writable by others (chmod go-w {folder})" in said


def test_a_link_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = tmp_path / "xla"
    link.symlink_to(target)
    assert unsafe_folder(link) == f"{link} is not a plain folder"

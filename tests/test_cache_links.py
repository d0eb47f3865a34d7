"""Run as root with a student's HOME and XDG_CACHE_HOME (`sudo -E`), the kit follows none of
the student's links and changes nothing of root's.

An ordinary user (made here with `useradd`) prepares the cache folder the kit keeps its
state in, `~/.cache/sdpa-course`, with links to root's own folders and files: the warm
zygote's folder as a link, or as a folder of the student's own, the kit's folder as a
link. `check` (keeping its zygote warm) and `grade` then run as root with that HOME: no file
outside the prepared folder changes owner, mode or content, and both still grade (a warm
folder that cannot be trusted means no zygote is kept: `autograder.sandbox.warm`). The zygote
keeps no font list any more (it does not import matplotlib); `tests/test_sandbox_warm.py`
has the warm folder's other cases.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from grade_course_factory import ANSWER_KEY, answer_key, released_course, submit

as_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None,
    reason="needs root and useradd (an ordinary user prepares the links)")



@pytest.fixture(scope="module")
def student():
    name = f"sdpa-links-{os.getpid()}"
    subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell",
                    "/usr/sbin/nologin", name], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def _owned(path: Path, user) -> None:
    os.lchown(path, user.pw_uid, user.pw_gid)


def _roots(victims: Path) -> dict[str, Path]:
    """Root's own folders and files the student's links point at."""
    victims.mkdir(mode=0o755)
    folder = victims / "root-folder"
    folder.mkdir(mode=0o755)
    (folder / "root-file.txt").write_text("root's own\n")
    private = victims / "root-cache"
    private.mkdir(mode=0o700)
    (victims / "root-file.txt").write_text("root's own\n")
    (victims / "root-file.txt").chmod(0o644)
    return {"folder": folder, "private": private, "file": victims / "root-file.txt"}


def _prepare(home: Path, user, scenario: str, roots: dict[str, Path]) -> None:
    """What the student leaves in their home before root runs the kit in it."""
    kit = home / ".cache" / "sdpa-course"
    for folder in (home, home / ".cache"):
        folder.mkdir(mode=0o755)
        _owned(folder, user)
    if scenario == "kit-folder-is-a-link":
        kit.symlink_to(roots["private"])
        _owned(kit, user)
        return
    if scenario == "no-link":
        return
    kit.mkdir(mode=0o700)
    _owned(kit, user)
    warm = kit / "warm"
    if scenario == "warm-folder-is-a-link":
        warm.symlink_to(roots["folder"])
        _owned(warm, user)
    elif scenario == "warm-folder-is-the-students":
        warm.mkdir(mode=0o700)
        _owned(warm, user)


def _stop_warm(home: Path) -> None:
    """Stop a zygote a check left warm in `home` (none should be, but never leave one)."""
    from autograder.sandbox import warm

    folder = home / ".cache" / "sdpa-course" / "warm"
    if folder.is_dir() and not folder.is_symlink():
        for entry in folder.iterdir():
            if entry.is_socket():
                warm.stop(entry)


def _state(folder: Path) -> dict[str, tuple]:
    """Owner, mode and content of everything under `folder` (links not followed)."""
    found = {}
    for path in [folder, *sorted(folder.rglob("*"))]:
        info = path.lstat()
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else b""
        found[str(path)] = (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode), content)
    return found


def _run(home: Path, *argv: str, warm: str = "0") -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "SDPA_COURSE_WARM_SANDBOX": warm}
    env.pop("XDG_RUNTIME_DIR", None)
    return subprocess.run([sys.executable, "-m", "sdpa_course.cli", *argv], env=env,
                          capture_output=True, text=True, timeout=600, cwd=home)


SCENARIOS = ["warm-folder-is-a-link", "warm-folder-is-the-students", "kit-folder-is-a-link"]


@as_root
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_check_as_root_in_a_students_home_follows_none_of_their_links(
        tmp_path, student, scenario):
    roots = _roots(tmp_path / "root")
    _prepare(tmp_path / "home", student, scenario, roots)
    before = _state(tmp_path / "root")
    try:
        done = _run(tmp_path / "home", "check", str(ANSWER_KEY), warm="60")
    finally:
        _stop_warm(tmp_path / "home")
    assert _state(tmp_path / "root") == before
    assert done.returncode == 0, done.stdout + done.stderr
    assert "20.0 / 20.0" in done.stdout


@as_root
def test_check_as_root_in_a_students_home_keeps_its_cache_in_folders_of_its_own(
        tmp_path, student):
    """No link: root's check grades, its warm zygote's folder made root's own, 0700."""
    roots = _roots(tmp_path / "root")
    _prepare(tmp_path / "home", student, "no-link", roots)
    before = _state(tmp_path / "root")
    try:
        done = _run(tmp_path / "home", "check", str(ANSWER_KEY), warm="60")
        folder = tmp_path / "home" / ".cache" / "sdpa-course" / "warm"
        info = folder.lstat()
    finally:
        _stop_warm(tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert "20.0 / 20.0" in done.stdout
    assert _state(tmp_path / "root") == before
    assert stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o700


@as_root
@pytest.mark.parametrize("scenario", [  # check runs every scenario quickly; grade, one
    SCENARIOS[0], *(pytest.param(s, marks=pytest.mark.slow) for s in SCENARIOS[1:])])
def test_grade_as_root_in_a_students_home_follows_none_of_their_links(
        tmp_path, student, scenario):
    course = released_course(tmp_path / "course")
    submit(course, "ada", answer_key())
    roots = _roots(tmp_path / "root")
    _prepare(tmp_path / "home", student, scenario, roots)
    before = _state(tmp_path / "root")
    done = _run(tmp_path / "home", "grade", "--course-dir", str(course), "--workers", "1")
    assert _state(tmp_path / "root") == before
    assert done.returncode == 0, done.stdout + done.stderr


# -- the helper itself, as any user --------------------------------------------------------


def test_a_kit_folder_is_made_private_and_a_link_at_any_level_is_refused(tmp_path):
    from autograder.sandbox.private import UnsafeFolder, open_private

    root = tmp_path / "cache"
    os.close(open_private("warm", root=str(root)))
    assert stat.S_IMODE((root / "sdpa-course" / "warm").stat().st_mode) == 0o700
    (root / "sdpa-course").chmod(0o755)  # as earlier versions made it: made private again
    os.close(open_private("warm", root=str(root)))
    assert stat.S_IMODE((root / "sdpa-course").stat().st_mode) == 0o700
    (root / "sdpa-course" / "warm").chmod(0o755)  # a folder of its own, opened to others
    with pytest.raises(UnsafeFolder, match="may be entered by others"):
        open_private("warm", root=str(root))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (root / "sdpa-course" / "fonts").symlink_to(elsewhere)
    with pytest.raises(UnsafeFolder, match="fonts is a link"):
        open_private("fonts", root=str(root))
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755  # never chmod'ed through it
    (tmp_path / "linked-cache").symlink_to(root)
    with pytest.raises(UnsafeFolder, match="linked-cache is a link"):
        open_private("warm", root=str(tmp_path / "linked-cache"))


def test_a_file_is_replaced_never_written_through_and_a_link_is_never_read(tmp_path):
    from autograder.sandbox.private import open_private, read_file, write_file

    target = tmp_path / "roots-file"
    target.write_text("root's own")
    folder = open_private("fonts", root=str(tmp_path / "cache"))
    try:
        fonts = tmp_path / "cache" / "sdpa-course" / "fonts"
        (fonts / "fontlist.json").symlink_to(target)
        assert read_file(folder, "fontlist.json") is None
        write_file(folder, "fontlist.json", b"{}")
        assert target.read_text() == "root's own"
        assert not (fonts / "fontlist.json").is_symlink()
        assert read_file(folder, "fontlist.json") == b"{}"
        assert sorted(p.name for p in fonts.iterdir()) == ["fontlist.json"]
    finally:
        os.close(folder)

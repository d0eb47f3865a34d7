"""Run as root with a student's HOME and XDG_CACHE_HOME (`sudo -E`), the kit follows none of
the student's links and changes nothing of root's.

An ordinary user (made here with `useradd`) prepares the cache folder the kit keeps its
state in, `~/.cache/sdpa-course`, with links to root's own folders and files: the font-list
folder as a link, the font list itself as a link in a folder of the user's, the kit's
folder as a link. `check` and `grade` then run as root with that HOME; no file outside the
prepared folder changes owner, mode or content, and both refuse, naming the folder. (The warm
zygote's folder, `warm`, is opened the same way; `tests/test_sandbox_warm.py` has its links.)
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



def _font_list() -> str:
    """The name matplotlib gives its font list (read, not imported: matplotlib is slow)."""
    from importlib.util import find_spec

    source = Path(find_spec("matplotlib.font_manager").origin).read_text()
    version = next(line.split("=")[1].strip().strip("'\"") for line in source.splitlines()
                   if line.strip().startswith("__version__ ="))
    return f"fontlist-v{version}.json"


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
    fonts = kit / "sandbox-matplotlib"
    if scenario == "font-folder-is-a-link":
        fonts.symlink_to(roots["folder"])
        _owned(fonts, user)
    elif scenario == "font-list-is-a-link":
        fonts.mkdir(mode=0o700)
        _owned(fonts, user)
        (fonts / _font_list()).symlink_to(roots["file"])
        _owned(fonts / _font_list(), user)


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


SCENARIOS = ["font-folder-is-a-link", "font-list-is-a-link", "kit-folder-is-a-link"]


@as_root
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_check_as_root_in_a_students_home_follows_none_of_their_links(
        tmp_path, student, scenario):
    roots = _roots(tmp_path / "root")
    _prepare(tmp_path / "home", student, scenario, roots)
    before = _state(tmp_path / "root")
    done = _run(tmp_path / "home", "check", str(ANSWER_KEY), warm="60")
    assert _state(tmp_path / "root") == before
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refusing" in done.stderr and str(tmp_path / "home" / ".cache") in done.stderr


@as_root
def test_check_as_root_in_a_students_home_keeps_its_cache_in_folders_of_its_own(
        tmp_path, student):
    """No link: root's check grades, its font list in a folder of root's, 0700."""
    roots = _roots(tmp_path / "root")
    _prepare(tmp_path / "home", student, "no-link", roots)
    before = _state(tmp_path / "root")
    done = _run(tmp_path / "home", "check", str(ANSWER_KEY))
    assert done.returncode == 0, done.stderr
    assert "20.0 / 20.0" in done.stdout
    assert _state(tmp_path / "root") == before
    fonts = tmp_path / "home" / ".cache" / "sdpa-course" / "sandbox-matplotlib"
    info = fonts.lstat()
    assert stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o700
    assert [p.name for p in fonts.iterdir()] == [_font_list()]


@as_root
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_grade_as_root_in_a_students_home_follows_none_of_their_links(
        tmp_path, student, scenario):
    course = released_course(tmp_path / "course")
    submit(course, "ada", answer_key())
    roots = _roots(tmp_path / "root")
    _prepare(tmp_path / "home", student, scenario, roots)
    before = _state(tmp_path / "root")
    done = _run(tmp_path / "home", "grade", "--course-dir", str(course), "--workers", "1")
    assert _state(tmp_path / "root") == before
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refusing" in done.stderr and str(tmp_path / "home" / ".cache") in done.stderr


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

"""`sdpa-course init` and `sdpa-course release` on throwaway course directories."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK
from sdpa_course.cli import main
from sdpa_course.course.create import init_course
from sdpa_course.course.directory import CONFIG_FILE
from sdpa_course.course.material import material_dir, notebook_path
from sdpa_course.course.release import release_assignment
from sdpa_course.errors import KitError

REPO = Path(__file__).resolve().parents[1]
SOURCE_NOTEBOOK = Path("source") / ASSIGNMENT / f"{NOTEBOOK}.ipynb"


def code_without_docstring(path: Path) -> str:
    module = ast.parse(path.read_text(encoding="utf-8"))
    body = module.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return ast.dump(ast.Module(body=body, type_ignores=[]))


def test_init_writes_the_config_and_the_source_notebook(tmp_path):
    course = init_course(tmp_path / "course")
    assert course == (tmp_path / "course").resolve()
    assert (course / SOURCE_NOTEBOOK).read_bytes() == (REPO / SOURCE_NOTEBOOK).read_bytes()
    assert sorted(p.name for p in course.iterdir()) == [CONFIG_FILE, "source"]


def test_init_config_has_the_same_code_as_the_repository_config(tmp_path):
    course = init_course(tmp_path / "course")
    assert code_without_docstring(course / CONFIG_FILE) == code_without_docstring(
        REPO / CONFIG_FILE)


def test_init_refuses_a_non_empty_folder_without_force(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(KitError, match="is not empty.*--force"):
        init_course(tmp_path)
    assert not (tmp_path / CONFIG_FILE).exists()
    init_course(tmp_path, force=True)
    assert (tmp_path / SOURCE_NOTEBOOK).is_file()
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_init_refuses_a_path_that_is_a_file(tmp_path):
    (tmp_path / "course").write_text("")
    with pytest.raises(KitError, match="not a folder"):
        init_course(tmp_path / "course", force=True)


def test_init_command_reports_a_refusal_without_a_traceback(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["init", str(tmp_path)]) == 2
    assert "sdpa-course init:" in capsys.readouterr().err


def test_course_material_is_found_in_a_checkout():
    assert material_dir("source") == REPO / "source"
    assert notebook_path("solutions") == REPO / "solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    with pytest.raises(ValueError):
        material_dir("release")


@pytest.mark.slow
def test_release_builds_the_student_notebook_without_the_venv_on_path(tmp_path, monkeypatch):
    course = init_course(tmp_path / "course")
    # As at the repository root: the jupytext source (with solutions) sits beside the notebook.
    shutil.copyfile(REPO / "source" / ASSIGNMENT / f"{NOTEBOOK}.py",
                    course / "source" / ASSIGNMENT / f"{NOTEBOOK}.py")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # nbgrader must still find alembic
    release = release_assignment(course)
    assert release == course / "release" / ASSIGNMENT
    assert sorted(p.name for p in release.iterdir()) == [f"{NOTEBOOK}.ipynb"]
    text = (release / f"{NOTEBOOK}.ipynb").read_text()
    assert "NotImplementedError(\\\"Exercise 3: write attention() here\\\")" in text
    assert "BEGIN SOLUTION" not in text
    # Releasing again overwrites quietly.
    assert release_assignment(course) == release


def test_release_refuses_a_folder_that_is_not_a_course(tmp_path):
    with pytest.raises(KitError, match="not a course directory.*sdpa-course init"):
        release_assignment(tmp_path)


def test_release_reports_a_missing_source_notebook(tmp_path):
    course = init_course(tmp_path / "course")
    (course / SOURCE_NOTEBOOK).unlink()
    with pytest.raises(KitError, match="has no source notebook"):
        release_assignment(course)


@pytest.mark.slow
def test_init_works_from_the_built_wheel(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(REPO),
         "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and "hatchling" in done.stderr:
        pytest.skip(f"could not fetch the build backend to build a wheel: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    [wheel] = (tmp_path / "dist").glob("sdpa_course-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "unpacked")
    for kind in ("source", "solutions"):
        assert f"sdpa_course/data/{kind}/{ASSIGNMENT}/{NOTEBOOK}.ipynb" in names
    # every file of the three packages, in every subpackage, templates included
    kit = {path.relative_to(REPO).as_posix()
           for package in ("sdpa_ref", "autograder", "sdpa_course")
           for path in (REPO / package).rglob("*")
           if path.is_file() and "__pycache__" not in path.parts}
    assert "sdpa_course/nbgrader_ext/templates/sdpa_feedback/index.html.j2" in kit
    assert kit <= names, sorted(kit - names)

    # Import the kit from the unpacked wheel only (it comes first on the path; the checkout is
    # not the working directory) and create a course from its package data.
    script = (
        "import sys, sdpa_course\n"
        "from pathlib import Path\n"
        "from sdpa_course.course.create import init_course\n"
        "assert Path(sdpa_course.__file__).is_relative_to(Path(sys.argv[1])), "
        "sdpa_course.__file__\n"
        "print(init_course(Path(sys.argv[2])))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "unpacked")}
    ran = subprocess.run([sys.executable, "-c", script, str(tmp_path / "unpacked"),
                          str(tmp_path / "course")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    course = tmp_path / "course"
    assert (course / SOURCE_NOTEBOOK).read_bytes() == (REPO / SOURCE_NOTEBOOK).read_bytes()
    assert (course / CONFIG_FILE).is_file()

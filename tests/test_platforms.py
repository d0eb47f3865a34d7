"""`sdpa-course autograder gradescope|prairielearn`, run for real: each build's set-up installs
the kit in a fresh virtual environment, and its grader grades in the folders the platform
documents (`/autograder`, `/grade`, mounted in a private mount namespace: `platform_layouts`).

On the answer key, a blank release, one wrong answer per exercise and a broken notebook, each
results.json must fit the platform's documented schema (`tests/schemas/`) and give every
score `sdpa-course check` gives the same file and student id. Where the container refuses the
sandbox's user namespaces, the default build refuses and names the layer; a build with
`--isolation container` grades and says so.

The set-ups (pip installing the kit and its ~120 pinned dependencies) take minutes: slow.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import jsonschema
import pytest
from platform_layouts import CAN_RUN, WHY_NOT, in_layout, mount_points, start_in_layout

from autograder.corpus import cases
from autograder.exercises import MAX_SCORE
from autograder.variants import variant_for
from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK
from sdpa_course.course.create import init_course
from sdpa_course.course.directory import Course
from sdpa_course.course.release import release_assignment
from sdpa_course.platforms import gradescope, prairielearn
from sdpa_course.platforms.install import pinned_requirements

SCHEMAS = Path(__file__).parent / "schemas"
KIT = str(Path(sys.executable).parent / "sdpa-course")
GS_STUDENT = "Ada.Lovelace@example.com"  # Gradescope grades as the submitter's email
PL_SEED = 48213377  # a PrairieLearn variant seed: its student id is pl-48213377
PL_STUDENT = f"pl-{PL_SEED}"
WRONG = {"ex1": "ex1-no-scaling", "ex2": "ex2-unstable-softmax", "ex3": "ex3-no-scaling",
         "ex4": "ex4-no-rescale"}  # one mistake per exercise, from the corpus
SUBMISSIONS = ["answer-key", "blank-release", *[f"wrong-{ex}" for ex in WRONG], "broken"]
# The Python the kit's tests run on, for the set-ups' fresh environments (its versions are
# the pinned ones); readable by the sandbox's spare uids through its private root.
PYTHON = str(Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}."
             f"{sys.version_info[1]}")

needs_layouts = pytest.mark.skipif(not CAN_RUN, reason=WHY_NOT)


def _env(home: Path) -> dict[str, str]:
    """A platform's plain environment; pip keeps this machine's settings and cache."""
    cache = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "pip"
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(home),
            "SDPA_PYTHON": PYTHON, "PIP_CACHE_DIR": str(cache), "TMPDIR": tempfile.gettempdir(),
            **{k: v for k, v in os.environ.items() if k.startswith("PIP_")}}


# -- quick checks of the parts ------------------------------------------------------------

def test_the_pins_are_the_versions_installed_here():
    import importlib.metadata

    pins = dict(line.split("==") for line in pinned_requirements())
    assert pins["numpy"] == importlib.metadata.version("numpy")
    assert pins["nbgrader"] == importlib.metadata.version("nbgrader")
    assert "sdpa-course" not in pins and "pytest" in pins
    assert "hypothesis" not in pins  # the test extra is not the kit's


def test_an_ungradeable_result_fits_each_schema_and_says_why():
    from sdpa_course.platforms.runner import Ungradeable

    outcome = Ungradeable("Your submission could not be graded: it is not JSON")
    gs = gradescope.results(outcome, "a@b.c")
    jsonschema.validate(gs, _schema("gradescope"))
    assert gs["score"] == 0 and "not JSON" in gs["output"]
    pl = prairielearn.results(outcome, "pl-1")
    jsonschema.validate(pl, _schema("prairielearn"))
    assert pl["gradable"] is False and "not JSON" in pl["format_errors"][0]


def test_the_grader_finds_the_notebook_before_a_python_file(tmp_path):
    from sdpa_course.platforms.runner import find_submission

    assert find_submission(tmp_path) is None
    (tmp_path / "scratch.py").write_text("x = 1\n")
    assert find_submission(tmp_path) == tmp_path / "scratch.py"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mine.ipynb").write_text("{}")
    assert find_submission(tmp_path) == tmp_path / "sub" / "mine.ipynb"
    (tmp_path / f"{NOTEBOOK}.ipynb").write_text("{}")
    assert find_submission(tmp_path) == tmp_path / f"{NOTEBOOK}.ipynb"


def test_the_grader_never_follows_a_link_out_of_the_submission(tmp_path):
    from sdpa_course.platforms.runner import find_submission

    staff, submitted = tmp_path / "source", tmp_path / "submission"
    staff.mkdir()
    submitted.mkdir()
    (staff / "sdpa_grader.json").write_text('{"seed": "secret"}')
    (submitted / f"{NOTEBOOK}.py").symlink_to(staff / "sdpa_grader.json")
    (submitted / "also.ipynb").symlink_to(staff / "sdpa_grader.json")
    assert find_submission(submitted) is None


def test_the_command_refuses_a_folder_that_is_not_a_course(tmp_path):
    done = subprocess.run([KIT, "autograder", "gradescope", "--course-dir", str(tmp_path),
                           "--out", str(tmp_path / "a.zip")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "not a course directory" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "a.zip").exists()


def _schema(platform: str) -> dict:
    return json.loads((SCHEMAS / f"{platform}_results.schema.json").read_text())


# -- the real layouts -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A course, its four builds (two platforms, two isolations), each set up fresh."""
    if not CAN_RUN:
        pytest.skip(WHY_NOT)
    top = tmp_path_factory.mktemp("platforms")
    course = init_course(top / "course")
    release_assignment(course)
    home = top / "home"
    home.mkdir()
    builds = {}
    for platform, out in (("gradescope", "gs.zip"), ("prairielearn", "pl")):
        for isolation in ("sandbox", "container"):
            target = top / f"{isolation}-{out}"
            done = subprocess.run([KIT, "autograder", platform, "--course-dir", str(course),
                                   "--out", str(target), "--isolation", isolation],
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr
            builds[platform, isolation] = target
    # Gradescope unpacks its zip into /autograder/source and runs setup.sh there
    gs_source = top / "gs-installed" / "source"
    gs_source.mkdir(parents=True)
    with zipfile.ZipFile(builds["gradescope", "sandbox"]) as archive:
        archive.extractall(gs_source)
    for name in ("setup.sh", "run_autograder"):
        (gs_source / name).chmod(0o755)
    pl_venv = top / "pl-venv"  # what the image's RUN setup.sh makes at /opt/sdpa-course
    pl_venv.mkdir()
    with mount_points("/autograder", "/grade", prairielearn.VENV):
        setups = [
            start_in_layout({"/autograder": gs_source.parent},
                            ["bash", "/autograder/source/setup.sh"], env=_env(home),
                            log=top / "gs-setup.log"),
            start_in_layout({prairielearn.VENV: pl_venv},
                            ["bash", str(builds["prairielearn", "sandbox"] / "grader-image"
                                         / "setup.sh")], env=_env(home),
                            log=top / "pl-setup.log"),
        ]
        for setup, log in zip(setups, ("gs-setup.log", "pl-setup.log"), strict=True):
            assert setup.wait(timeout=1800) == 0, (top / log).read_text()[-3000:]
        yield {"top": top, "course": course, "home": home, "builds": builds,
               "gs_installed": gs_source.parent, "pl_venv": pl_venv}


@pytest.fixture(scope="module")
def submissions(built, tmp_path_factory):
    """name -> (file name, contents) for each student id: the answer key is that student's."""
    folder = tmp_path_factory.mktemp("submissions")
    seed = Course.open(built["course"]).variants.seed
    made = {}
    for student in (GS_STUDENT, PL_STUDENT):
        key = folder / f"{student}-key.ipynb"
        done = subprocess.run([KIT, "variant", student, "--course-dir", str(built["course"]),
                               "--answer-key", str(key)], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        mistakes = {c.name: c for c in cases(variant_for(seed, ASSIGNMENT, student))}
        release = built["course"] / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
        made[student] = {
            "answer-key": (f"{NOTEBOOK}.ipynb", key.read_bytes()),
            "blank-release": (f"{NOTEBOOK}.ipynb", release.read_bytes()),
            **{f"wrong-{ex}": (f"{NOTEBOOK}.py", mistakes[name].source.encode())
               for ex, name in WRONG.items()},
            "broken": (f"{NOTEBOOK}.ipynb", release.read_bytes()[:700]),  # cut short
        }
    return made


def _check(built, path: Path, student: str) -> tuple[dict | None, str]:
    done = subprocess.run([KIT, "check", str(path), "--student", student, "--course",
                           str(built["course"]), "--json"], capture_output=True, text=True,
                          timeout=600)
    if done.returncode == 2:
        return None, done.stderr
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def _grade_gradescope(built, name: str, filename: str, content: bytes, *,
                      isolation: str = "sandbox", refuse: bool = False) -> tuple[dict, Path]:
    case = built["top"] / f"gs-{isolation}-{refuse}-{name}"
    for sub in ("source", "venv", "submission"):
        (case / sub).mkdir(parents=True)
    (case / "submission" / filename).write_bytes(content)
    (case / "submission_metadata.json").write_text(json.dumps({
        "id": 123456, "created_at": "2026-12-04T14:22:32.365935-07:00",
        "assignment": {"id": 25828, "title": "Attention", "total_points": "22.0"},
        "submission_method": "upload",
        "users": [{"email": GS_STUDENT, "id": 1234, "name": "Ada Lovelace"}],
        "previous_submissions": []}))
    source = built["top"] / f"gs-{isolation}-source"
    if not source.exists():
        with zipfile.ZipFile(built["builds"]["gradescope", isolation]) as archive:
            archive.extractall(source)
    installed = built["gs_installed"]
    with mount_points("/autograder"):
        done = in_layout({"/autograder": case, "/autograder/source": source,
                          "/autograder/venv": installed / "venv"},
                         ["sh", "-c", "cp /autograder/source/run_autograder /autograder/ && "
                                      "chmod +x /autograder/run_autograder && "
                                      "exec /autograder/run_autograder"],
                         env=_env(built["home"]), refuse_namespaces=refuse, cwd="/autograder")
    assert done.returncode == 0, done.stdout + done.stderr
    results = case / "results" / "results.json"
    assert results.is_file(), done.stdout + done.stderr
    return json.loads(results.read_text()), case / "submission" / filename


def _grade_prairielearn(built, name: str, filename: str, content: bytes, *,
                        isolation: str = "sandbox", refuse: bool = False) -> tuple[dict, Path]:
    case = built["top"] / f"pl-{isolation}-{refuse}-{name}"
    for sub in ("data", "student", "tests"):
        (case / sub).mkdir(parents=True)
    (case / "student" / filename).write_bytes(content)
    (case / "data" / "data.json").write_text(json.dumps({
        "params": {prairielearn.STUDENT_PARAM: PL_STUDENT}, "correct_answers": {},
        "submitted_answers": {"_files": []}, "format_errors": {}, "partial_scores": {},
        "score": 0, "feedback": {}, "variant_seed": PL_SEED, "options": {},
        "raw_submitted_answers": {}, "gradable": True}))
    tests = built["builds"]["prairielearn", isolation] / "questions" / prairielearn.QUESTION
    with mount_points("/grade", prairielearn.VENV):
        done = in_layout({"/grade": case, "/grade/tests": tests / "tests",
                          prairielearn.VENV: built["pl_venv"]},
                         ["/grade/tests/run.sh"], env=_env(built["home"]),
                         refuse_namespaces=refuse)
    assert done.returncode == 0, done.stdout + done.stderr
    results = case / "results" / "results.json"
    assert results.is_file(), done.stdout + done.stderr
    assert results.stat().st_size < 2**20  # the documented limit
    return json.loads(results.read_text()), case / "student" / filename


def _report_tests(report: dict) -> dict[str, tuple[float, float, bool]]:
    """`Exercise 3: name` -> (score, max_score, extra credit), as check reported them."""
    return {f"Exercise {ex.removeprefix('ex')}: {t['name']}":
            (t["score"], t["max_score"], bool(exercise.get("extra_credit")))
            for ex, exercise in report["exercises"].items() for t in exercise["tests"]}


def _assert_gradescope_matches(results: dict, report: dict) -> None:
    expected = _report_tests(report)
    shown = {t["name"].removeprefix("Extra credit, "): t for t in results["tests"]}
    assert set(shown) == set(expected)
    for name, (score, max_score, extra) in expected.items():
        test = shown[name]
        assert test["score"] == score, name
        assert test["max_score"] == (0.0 if extra else max_score), name
        assert ("extra credit" in test["tags"]) == extra
        assert test["status"] == ("passed" if test["score"] == max_score else "failed")
    assert results["score"] == pytest.approx(report["score"] + report["extra_credit"])
    assert sum(t["score"] for t in results["tests"]) == pytest.approx(results["score"])
    assert sum(t["max_score"] for t in results["tests"]) == pytest.approx(MAX_SCORE)


def _assert_prairielearn_matches(results: dict, report: dict) -> None:
    expected = _report_tests(report)
    shown = {t["name"].removeprefix("Extra credit, "): t for t in results["tests"]}
    assert set(shown) == set(expected)
    for name, (score, max_score, extra) in expected.items():
        assert shown[name]["points"] == score, name
        assert shown[name]["max_points"] == (0.0 if extra else max_score), name
    earned = report["score"] + report["extra_credit"]
    assert results["gradable"] is True
    assert results["score"] == pytest.approx(min(1.0, earned / report["max_score"]))


def _no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and 'File "' not in text


@needs_layouts
@pytest.mark.slow
@pytest.mark.parametrize("name", SUBMISSIONS)
def test_gradescope_results_fit_the_schema_and_equal_check(built, submissions, name):
    filename, content = submissions[GS_STUDENT][name]
    results, path = _grade_gradescope(built, name, filename, content)
    jsonschema.validate(results, _schema("gradescope"))
    report, said = _check(built, path, GS_STUDENT)
    _no_traceback(results["output"], *(t["output"] for t in results["tests"]))
    if report is None:  # check could not grade it: neither can Gradescope, and it says why
        assert name == "broken"
        assert results["score"] == 0 and results["tests"] == []
        assert "could not be graded" in results["output"]
        reason = said.strip().removeprefix("sdpa-course check: ")
        assert reason.split(":")[-1].strip() in results["output"]
        assert results["extra_data"]["sdpa_course"]["status"] == "ungradeable"
        return
    _assert_gradescope_matches(results, report)
    data = results["extra_data"]["sdpa_course"]
    assert data["isolation"] == "sandbox" and data["student"] == GS_STUDENT
    assert data["variant"] == report["variant"]["label"]
    if name == "answer-key":
        assert report["score"] == MAX_SCORE
    if name.startswith("wrong-"):
        exercise = name.removeprefix("wrong-")
        lost = [t for t in results["tests"] if t["status"] == "failed"
                and exercise in t["tags"]]
        assert lost and all("Diagnosis: " in t["output"] and "(lesson: " in t["output"]
                            for t in lost)


@needs_layouts
@pytest.mark.slow
@pytest.mark.parametrize("name", SUBMISSIONS)
def test_prairielearn_results_fit_the_schema_and_equal_check(built, submissions, name):
    filename, content = submissions[PL_STUDENT][name]
    results, path = _grade_prairielearn(built, name, filename, content)
    jsonschema.validate(results, _schema("prairielearn"))
    report, said = _check(built, path, PL_STUDENT)
    _no_traceback(results.get("message", ""), *(t["message"] for t in results.get("tests", [])))
    if report is None:
        assert name == "broken"
        assert results["gradable"] is False and "score" not in results
        reason = said.strip().removeprefix("sdpa-course check: ")
        assert reason.split(":")[-1].strip() in results["format_errors"][0]
        return
    _assert_prairielearn_matches(results, report)
    assert results["sdpa_course"]["isolation"] == "sandbox"
    if name == "answer-key":
        assert results["score"] == 1.0


@needs_layouts
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["gradescope", "prairielearn"])
def test_a_container_that_refuses_the_sandbox_is_refused_and_named(built, submissions,
                                                                   platform):
    grade = _grade_gradescope if platform == "gradescope" else _grade_prairielearn
    student = GS_STUDENT if platform == "gradescope" else PL_STUDENT
    filename, content = submissions[student]["answer-key"]
    results, _ = grade(built, "refused", filename, content, refuse=True)
    jsonschema.validate(results, _schema(platform))
    said = results["output"] if platform == "gradescope" else results["format_errors"][0]
    assert "user, mount, PID, IPC and network namespaces" in said  # the missing layer
    assert "--isolation container" in said
    if platform == "gradescope":
        assert results["score"] == 0 and results["tests"] == []
    else:
        assert results["gradable"] is False


@needs_layouts
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["gradescope", "prairielearn"])
def test_container_isolation_grades_there_and_says_so(built, submissions, platform):
    grade = _grade_gradescope if platform == "gradescope" else _grade_prairielearn
    student = GS_STUDENT if platform == "gradescope" else PL_STUDENT
    filename, content = submissions[student]["wrong-ex3"]
    results, path = grade(built, "container", filename, content, isolation="container",
                          refuse=True)
    jsonschema.validate(results, _schema(platform))
    report, _ = _check(built, path, student)
    if platform == "gradescope":
        _assert_gradescope_matches(results, report)
        said, data = results["output"], results["extra_data"]["sdpa_course"]
    else:
        _assert_prairielearn_matches(results, report)
        said, data = results["message"], results["sdpa_course"]
    assert data["isolation"] == "container"
    assert "container mode" in said and "each submission has a container of its own" in said
    assert "user, mount, PID, IPC and network namespaces" in said


@needs_layouts
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["gradescope", "prairielearn"])
def test_student_code_cannot_read_the_seed_in_container_mode(built, platform):
    grade = _grade_gradescope if platform == "gradescope" else _grade_prairielearn
    staff = "/autograder/source" if platform == "gradescope" else "/grade/tests"
    seed = Course.open(built["course"]).variants.seed
    # a cell's error is shown to the student: the seed would be in it, were it read
    source = f"raise RuntimeError(open({staff + '/' + gradescope.CONFIG_NAME!r}).read())\n"
    results, _ = grade(built, "reads-seed", f"{NOTEBOOK}.py", source.encode(),
                       isolation="container", refuse=True)
    said = json.dumps(results)
    assert "container mode" in said and "PermissionError" in said  # refused, and shown
    assert seed[:16] not in said


@needs_layouts
@pytest.mark.slow
def test_the_builds_carry_the_seed_only_where_staff_read(built):
    seed = Course.open(built["course"]).variants.seed
    with zipfile.ZipFile(built["builds"]["gradescope", "sandbox"]) as archive:
        names = set(archive.namelist())
        assert {"setup.sh", "run_autograder", "README.md", gradescope.CONFIG_NAME} <= names
        assert seed in archive.read(gradescope.CONFIG_NAME).decode()
        readme = archive.read("README.md").decode()
    assert "ex2_explain" in readme and "2 points" in readme  # the manual question to create
    pl = built["builds"]["prairielearn", "sandbox"]
    question = pl / "questions" / prairielearn.QUESTION
    assert seed in (question / "tests" / gradescope.CONFIG_NAME).read_text()
    served = [p for p in pl.rglob("*") if p.is_file() and "tests" not in p.parts]
    for path in served:  # the question's pages, its notebook, the image: no seed
        if path.suffix != ".whl":
            assert seed not in path.read_text(errors="replace"), path
    info = json.loads((question / "info.json").read_text())
    assert info["gradingMethod"] == "External"
    assert info["externalGradingOptions"]["entrypoint"] == "/grade/tests/run.sh"

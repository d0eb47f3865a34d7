"""`sdpa-course autograder gradescope`: the zip Gradescope's autograder specification asks for.

Gradescope unpacks the zip into `/autograder/source`, runs `setup.sh` there once to build its
image, and for each submission copies `run_autograder` to `/autograder/run_autograder` and runs
it with the student's files in `/autograder/submission/` and who they are in
`/autograder/submission_metadata.json` (`users[0].email`, the id the student types into the
notebook's *Your numbers* cell). It reads `/autograder/results/results.json`: here one test per
hidden test (`score`, `max_score`, `status`, the kit's message with the exercise's diagnoses,
`visibility`), extra credit as tests worth 0 whose points add to the score, and a top-level
`output` with the total, whose numbers were graded, the isolation used and the warnings. A
submission that cannot be graded scores 0 with the reason as its output, never a traceback.

`python -m sdpa_course.platforms.gradescope /autograder` is what `run_autograder` runs.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path

from sdpa_course.platforms.runner import (
    CONFIG_NAME,
    SANDBOX,
    Graded,
    GraderConfig,
    Ungradeable,
    find_submission,
    grade,
    metadata_json,
    write_results,
)

PLATFORM = "gradescope"
ROOT = "/autograder"
VENV = "/autograder/venv"
RUN_AUTOGRADER = f"""\
#!/usr/bin/env bash
# Grades /autograder/submission with the sdpa-course kit. Written by
# `sdpa-course autograder gradescope`: rebuild, do not edit.
cd {ROOT}
"${{SDPA_VENV:-{VENV}}}/bin/python" -m sdpa_course.platforms.gradescope {ROOT}
status=$?
if [ ! -s {ROOT}/results/results.json ]; then  # the kit could not even start: say so
    mkdir -p {ROOT}/results
    msg="The autograder could not start (exit status $status), so this submission was"
    msg="$msg not graded. Please tell your instructor."
    printf '{{"score": 0, "output": "%s", "stdout_visibility": "hidden"}}\\n' "$msg" \\
        > {ROOT}/results/results.json
fi
"""
# Student text (cell errors, warnings, file names) is shown as text, never as HTML or markdown.
PLAIN_TEXT = {"output_format": "text", "test_output_format": "text", "test_name_format": "text"}
KIT_FAILED = ("The autograder itself failed ({error}), so this submission was not graded; "
              "please tell your instructor. Resubmitting will not help until it is fixed.")


def results(outcome: Graded | Ungradeable, student: str) -> dict:
    """Gradescope's results.json for one graded or ungradeable submission."""
    if isinstance(outcome, Ungradeable):
        return {"score": 0.0, "output": outcome.reason, **PLAIN_TEXT, "visibility": "visible",
                "stdout_visibility": "hidden", "tests": [],
                "extra_data": {"sdpa_course": {"status": "ungradeable", "student": student,
                                               "reason": outcome.reason}}}
    tests = [{
        "name": ("Extra credit, " if test.extra_credit else "") + test.name,
        "score": test.score,
        "max_score": 0.0 if test.extra_credit else test.max_score,  # adds, never owed
        "status": "passed" if test.passed else "failed",
        "output": test.output,
        "tags": [test.exercise] + (["extra credit"] if test.extra_credit else []),
        "visibility": "visible",
    } for test in outcome.tests]
    report = outcome.report
    return {
        "score": round(outcome.score + outcome.extra_credit, 4),
        "output": outcome.summary,
        **PLAIN_TEXT,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"sdpa_course": {
            "status": "graded", "student": student, "isolation": outcome.isolation,
            "score": outcome.score, "max_score": outcome.max_score,
            "extra_credit": outcome.extra_credit, "variant": report["variant"].get("label")}},
    }


def student_of(metadata: object) -> str:
    """The first submitter's email (the id the kit grades as), "" when there is none."""
    users = metadata.get("users") if isinstance(metadata, dict) else None
    first = users[0] if isinstance(users, list) and users else None
    email = first.get("email") if isinstance(first, dict) else None
    return email.strip() if isinstance(email, str) else ""


def run(root: Path = Path(ROOT)) -> int:
    """Grade `root/submission` and write `root/results/results.json`; 0 whenever written."""
    student = ""
    try:
        config = GraderConfig.read(root / "source" / CONFIG_NAME)
        student = student_of(metadata_json(root / "submission_metadata.json"))
        outcome = grade(find_submission(root / "submission"), student, config,
                        staff_only=(root / "source",))  # the seed: never student code's
        written = results(outcome, student)
    except Exception as err:  # noqa: BLE001 - the kit failed: the student gets a sentence
        traceback.print_exc()  # run_autograder's stdout: the instructor's, hidden from students
        written = results(Ungradeable(KIT_FAILED.format(error=type(err).__name__)), student)
    write_results(root / "results" / "results.json", written)
    return 0


def readme(parts, isolation: str, python: str) -> str:
    questions = "\n".join(
        f"- **{q.grade_id}**, {q.points:g} points: \"{q.prompt}\". Graders read the student's "
        f"answer in the notebook's cell under that question (Gradescope shows the notebook)."
        for q in parts.manual_questions) or "- none"
    mode = ("the kit's sandbox; where Gradescope's container refuses it, every submission is "
            "refused with the reason (rebuild with `--isolation container` to grade anyway)"
            if isolation == SANDBOX else
            "the kit's sandbox where the container allows it, else the container alone "
            "(`--isolation container`: each submission has a container of its own); every "
            "result says which")
    return f"""\
# sdpa-course autograder for Gradescope

Written by `sdpa-course autograder gradescope`. It carries this course's seed: keep it
among staff (upload it to Gradescope, never share it with students).

1. Create a *Programming Assignment*, upload this zip as its autograder (Ubuntu base image),
   and hand out `release/sdpa/attention.ipynb` from the course. Students submit the notebook.
2. Students type the email address they use on Gradescope as `STUDENT_ID` in the notebook's
   *Your numbers* cell: the autograder grades each submission as its submitter's email.
3. Create these manual questions in the assignment's outline (the autograded points are the
   hidden tests, 20 points plus up to 4 of extra credit for Exercise 4):
{questions}

Isolation: {mode}.

Versions: `setup.sh` installs the kit's dependencies at the versions it was tested with
(`constraints.txt`, Python {python}). Where the image's `python3` cannot take them, it stops
and says so: choose a base image with that Python, or point `SDPA_PYTHON` at one.
"""


def build(course_dir: Path, out: Path, *, isolation: str = SANDBOX) -> Path:
    """Write the autograder zip for the course at `course_dir` to `out`."""
    # deferred: nbgrader and pip, to build; the grader in the container never needs them
    from sdpa_course.platforms.course_parts import course_parts
    from sdpa_course.platforms.install import python_version, write_installer

    parts = course_parts(course_dir)
    config = GraderConfig(seed=parts.seed, isolation=isolation, platform=PLATFORM)
    with tempfile.TemporaryDirectory(prefix="sdpa-gradescope-") as scratch:
        folder = Path(scratch)
        write_installer(folder, platform_name=PLATFORM, venv=VENV)
        (folder / "run_autograder").write_text(RUN_AUTOGRADER)
        (folder / "run_autograder").chmod(0o755)
        (folder / CONFIG_NAME).write_text(config.to_json())
        (folder / "README.md").write_text(readme(parts, isolation, python_version()))
        out = Path(out).resolve()
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo.from_file(path, path.relative_to(folder).as_posix())
                    with path.open("rb") as data:
                        archive.writestr(info, data.read(), zipfile.ZIP_DEFLATED)
        shutil.move(partial, out)
    return out


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(ROOT)))

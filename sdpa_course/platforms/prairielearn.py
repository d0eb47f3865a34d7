"""`sdpa-course autograder prairielearn`: a question and its external grader for PrairieLearn.

The folder written has the question (`questions/sdpa-attention/`: `info.json` with external
grading, `question.html` with a file upload, `server.py`, the release notebook to download in
`clientFilesQuestion/`, and in `tests/` the grader's entry point and its configuration with
the course seed, which PrairieLearn copies to `/grade/tests` and never serves to students)
and the grader's image (`grader-image/`: a Dockerfile running the same `setup.sh` as
Gradescope's, with no seed in it, since images are pushed to a public registry).

PrairieLearn passes no user to a grader: a student's numbers follow the question's variant.
`server.py` names each variant's student id (`pl-<variant seed>`), the page shows it for the
notebook's *Your numbers* cell, and the grader reads it back from `/grade/data/data.json`.
It writes `/grade/results/results.json`: `score` from 0 to 1 (the required points out of 20,
extra credit added up to full marks: PrairieLearn's scores stop at 1), one test per hidden test
with `points` and `max_points` (extra credit at `max_points` 0), and a `message` with the
total, the isolation used and the warnings. A submission that cannot be graded is
`"gradable": false` with its reason, which costs the student no attempt.

`python -m sdpa_course.platforms.prairielearn /grade` is what the entry point runs.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import traceback
import uuid
from pathlib import Path

from sdpa_course.assignment import NOTEBOOK
from sdpa_course.errors import KitError
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

PLATFORM = "prairielearn"
ROOT = "/grade"
VENV = "/opt/sdpa-course"
QUESTION = "sdpa-attention"
TIMEOUT_SECONDS = 300
STUDENT_PARAM = "student_id"
ENTRYPOINT = f"""\
#!/usr/bin/env bash
# PrairieLearn's entry point for the sdpa-course grader. Written by
# `sdpa-course autograder prairielearn`: rebuild, do not edit.
"${{SDPA_VENV:-{VENV}}}/bin/python" -m sdpa_course.platforms.prairielearn {ROOT}
status=$?
if [ ! -s {ROOT}/results/results.json ]; then  # the kit could not even start: say so
    mkdir -p {ROOT}/results
    msg="The grader could not start (exit status $status); please tell your instructor."
    printf '{{"gradable": false, "format_errors": ["%s"]}}\\n' "$msg" \\
        > {ROOT}/results/results.json
fi
"""
SERVER_PY = f'''\
# Names the student id of each variant of this question: the notebook's numbers follow it.
# Written by `sdpa-course autograder prairielearn`: rebuild, do not edit.


def generate(data):
    data["params"]["{STUDENT_PARAM}"] = "pl-" + str(data["variant_seed"])
'''
QUESTION_HTML = f"""\
<pl-question-panel>
  <p>Scaled dot-product attention. Download
  <a href="{{{{options.client_files_question_url}}}}/{NOTEBOOK}.ipynb" download>the notebook</a>,
  work through it, and upload it here.</p>
  <p>Your numbers: in the notebook's <em>Your numbers</em> cell, type
  <code>STUDENT_ID = "{{{{params.{STUDENT_PARAM}}}}}"</code>. This question grades you on
  the numbers of that id.</p>
  <p>Upload your notebook ({NOTEBOOK}.ipynb) or, if you worked in a Python file,
  {NOTEBOOK}.py.</p>
  <pl-file-upload optional-file-names="{NOTEBOOK}.ipynb, {NOTEBOOK}.py"></pl-file-upload>
</pl-question-panel>

<pl-submission-panel>
  <pl-external-grader-results></pl-external-grader-results>
  <pl-file-preview></pl-file-preview>
</pl-submission-panel>
"""
DOCKERFILE = """\
# The grader's image: the sdpa-course kit and the versions it was tested with, no seed.
# Written by `sdpa-course autograder prairielearn`: rebuild, do not edit.
FROM python:{python}-slim
COPY . /opt/sdpa-course-install
RUN SDPA_VENV={venv} bash /opt/sdpa-course-install/setup.sh && rm -rf /opt/sdpa-course-install
"""
KIT_FAILED = ("The grader itself failed ({error}), so this submission was not graded and "
              "costs no attempt; please tell your instructor.")


def results(outcome: Graded | Ungradeable, student: str) -> dict:
    """PrairieLearn's results.json for one graded or ungradeable submission."""
    if isinstance(outcome, Ungradeable):
        return {"gradable": False, "format_errors": [outcome.reason], "message": outcome.reason,
                "sdpa_course": {"status": "ungradeable", "student": student}}
    tests = [{
        "name": ("Extra credit, " if test.extra_credit else "") + test.name,
        "points": test.score,
        "max_points": 0.0 if test.extra_credit else test.max_score,  # adds, never owed
        "message": test.output,
    } for test in outcome.tests]
    earned = outcome.score + outcome.extra_credit
    message = outcome.summary
    if earned > outcome.max_score:
        message += (f"\nPrairieLearn's scores stop at full marks: the extra credit beyond "
                    f"{outcome.max_score:g} points is shown but cannot count here.")
    return {
        "gradable": True,
        "score": round(min(1.0, earned / outcome.max_score), 6),
        "message": message,
        "tests": tests,
        "sdpa_course": {"status": "graded", "student": student, "isolation": outcome.isolation,
                        "score": outcome.score, "max_score": outcome.max_score,
                        "extra_credit": outcome.extra_credit,
                        "variant": outcome.report["variant"].get("label")},
    }


def student_of(data: object) -> str:
    """The student id `server.py` gave this variant, "" when there is none."""
    params = data.get("params") if isinstance(data, dict) else None
    student = params.get(STUDENT_PARAM) if isinstance(params, dict) else None
    return student.strip() if isinstance(student, str) else ""


def run(root: Path = Path(ROOT)) -> int:
    """Grade `root/student` and write `root/results/results.json`; 0 whenever written."""
    student = ""
    try:
        config = GraderConfig.read(root / "tests" / CONFIG_NAME)
        student = student_of(metadata_json(root / "data" / "data.json"))
        outcome = grade(find_submission(root / "student"), student, config,
                        staff_only=(root / "tests",))  # the seed: never student code's
        written = results(outcome, student)
    except Exception as err:  # noqa: BLE001 - the kit failed: the student gets a sentence
        traceback.print_exc()  # the job's output: staff see it, students do not
        written = results(Ungradeable(KIT_FAILED.format(error=type(err).__name__)), student)
    write_results(root / "results" / "results.json", written)
    return 0


def info_json(parts, image: str) -> dict:
    return {
        # the same on every rebuild, so PrairieLearn keeps the question's history
        "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"sdpa-course/{QUESTION}/{parts.seed}")),
        "title": "Scaled dot-product attention (notebook)",
        "topic": "Attention",
        "tags": ["sdpa-course"],
        "type": "v3",
        "gradingMethod": "External",
        "externalGradingOptions": {"image": image, "entrypoint": f"{ROOT}/tests/run.sh",
                                   "timeout": TIMEOUT_SECONDS},
    }


def readme(parts, image: str, isolation: str, python: str) -> str:
    manual = sum(q.points for q in parts.manual_questions)
    names = ", ".join(q.grade_id for q in parts.manual_questions) or "none"
    return f"""\
# sdpa-course question for PrairieLearn

Written by `sdpa-course autograder prairielearn`. `questions/{QUESTION}/tests/` carries
this course's seed: keep it in the course's (private) repository, never in the image.

1. Build and push the grader's image: `docker build -t {image} grader-image && docker push
   {image}` (Python {python}, as the kit was tested; it holds no seed).
2. Copy `questions/{QUESTION}` into your course's `questions/` and sync.
3. Add it to an assessment with `"autoPoints": 20` and `"manualPoints": {manual:g}` (the
   hand-graded answers: {names}; graders read them in the uploaded notebook).

Isolation: {"the kit's sandbox, or a refusal with the reason" if isolation == SANDBOX else
"the kit's sandbox where the container allows it, else the container alone"
" (--isolation container); every result says which"}. PrairieLearn's graders run in Docker,
whose default seccomp profile refuses user namespaces: build with `--isolation container`
there.
"""


def build(course_dir: Path, out: Path, *, isolation: str = SANDBOX,
          image: str = "YOUR_DOCKERHUB_NAME/sdpa-course-grader") -> Path:
    """Write the question and the grader's image folder for the course to `out`."""
    # deferred: nbgrader and pip, to build; the grader in the container never needs them
    from sdpa_course.platforms.course_parts import course_parts
    from sdpa_course.platforms.install import python_version, write_installer

    out = Path(out).resolve()
    if out.exists() and any(out.iterdir()) and not (out / "questions" / QUESTION).is_dir():
        raise KitError(f"{out} is not empty and holds no earlier build of this question: "
                       "choose another --out")
    parts = course_parts(course_dir)
    config = GraderConfig(seed=parts.seed, isolation=isolation, platform=PLATFORM)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sdpa-prairielearn-", dir=out.parent) as scratch:
        folder = Path(scratch) / "out"
        question = folder / "questions" / QUESTION
        (question / "clientFilesQuestion").mkdir(parents=True)
        (question / "tests").mkdir()
        (question / "info.json").write_text(json.dumps(info_json(parts, image), indent=2) + "\n")
        (question / "question.html").write_text(QUESTION_HTML)
        (question / "server.py").write_text(SERVER_PY)
        shutil.copyfile(parts.release_notebook,
                        question / "clientFilesQuestion" / f"{NOTEBOOK}.ipynb")
        (question / "tests" / CONFIG_NAME).write_text(config.to_json())
        (question / "tests" / "run.sh").write_text(ENTRYPOINT)
        (question / "tests" / "run.sh").chmod(0o755)
        image_dir = folder / "grader-image"
        write_installer(image_dir, platform_name=PLATFORM, venv=VENV)
        (image_dir / "Dockerfile").write_text(
            DOCKERFILE.format(python=".".join(python_version().split(".")[:2]), venv=VENV))
        (folder / "README.md").write_text(readme(parts, image, isolation, python_version()))
        if out.exists():
            shutil.rmtree(out)
        shutil.move(folder, out)
    return out


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(ROOT)))

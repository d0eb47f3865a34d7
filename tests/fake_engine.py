"""A stand-in grading engine for the class-grading tests:
`grade_course(course, engine=fake_engine.grade_submission)`.

It never runs the notebook. Markers in a code cell decide what it does, so a test can ask
for a given score, a kit crash, a hang or a refusal without depending on the real engine:

    # FAKE:ex3=4.5          ex3 scores 4.5 (other exercises full marks)
    # FAKE:kill-worker      the grading process dies (os._exit)
    # FAKE:hang             the grading process never answers
    # FAKE:refuse           the engine refuses the file (SubmissionError)
    # FAKE:sleep=1.5        grading takes that many seconds

Every failed test's message names a file path of the grader, so that feedback redaction
has something to remove.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from autograder.exercises import EXERCISES
from autograder.submission import SubmissionError

MAX = {key: exercise.max_score for key, exercise in EXERCISES.items()}
LEAKY_PATH = "/opt/grader/autograder/suites/test_ex3.py"


def grade_submission(path, *, limits=None, pool=None) -> dict:
    notebook = json.loads(Path(path).read_text())
    code = "\n".join(
        "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for cell in notebook["cells"] if cell["cell_type"] == "code"
    )
    if "FAKE:kill-worker" in code:
        os._exit(3)
    if "FAKE:hang" in code:
        time.sleep(3600)
    for seconds in re.findall(r"FAKE:sleep=([\d.]+)", code):
        time.sleep(float(seconds))
    if "FAKE:refuse" in code:
        raise SubmissionError("the fake engine refuses this file")
    scores = dict(MAX)
    for exercise, value in re.findall(r"FAKE:(ex\d)=([\d.]+)", code):
        scores[exercise] = float(value)
    exercises = {}
    for exercise, top in MAX.items():
        lost = scores[exercise] < top
        exercises[exercise] = {
            "score": scores[exercise],
            "max_score": top,
            "diagnoses": ["mask-inverted"] if lost and exercise == "ex3" else [],
            "tests": [{
                "name": f"{exercise}_values",
                "score": scores[exercise],
                "max_score": top,
                "passed": not lost,
                "message": f"wrong values (raised in {LEAKY_PATH}, line 12)" if lost else "",
            }],
        }
    return {
        "submission": str(path),
        "score": sum(scores.values()),
        "max_score": sum(MAX.values()),
        "exercises": exercises,
    }

"""A stand-in grading engine for the class-grading tests:
`grade_course(course, engine=fake_engine.grade_submission)`.

It never runs the notebook. Markers in a code cell decide what it does, so a test can ask
for a given score, a kit crash, a hang or a refusal without depending on the real engine:

    # FAKE:ex3=4.5          ex3 scores 4.5 (other exercises full marks, the optional ex4 0)
    # FAKE:ex4=2.5          the optional ex4 earns 2.5 points of extra credit
    # FAKE:kill-worker      the grading process dies (os._exit)
    # FAKE:hang             the grading process never answers
    # FAKE:refuse           the engine refuses the file (SubmissionError)
    # FAKE:sleep=1.5        grading takes that many seconds
    # FAKE:ex2:timeout      ex2 also carries that diagnosis (its score unchanged)
    # FAKE:cell-timeout     a cell of no exercise did not run to the end (timeout)

Every failed test's message names a file path of the grader, so that feedback redaction
has something to remove.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from autograder.exercises import EXERCISES, MAX_SCORE
from autograder.submission import SubmissionError

MAX = {key: exercise.max_score for key, exercise in EXERCISES.items()}
LEAKY_PATH = "/opt/grader/autograder/suites/test_ex3.py"


def grade_submission(path, *, limits=None, pool=None, variant=None) -> dict:
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
    # every point of the required exercises, none of the optional one (not attempted)
    scores = {key: 0.0 if ex.extra_credit else ex.max_score for key, ex in EXERCISES.items()}
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
        exercises[exercise]["diagnoses"] += re.findall(rf"FAKE:{exercise}:([a-z-]+)", code)
        if EXERCISES[exercise].extra_credit:
            exercises[exercise] |= {"extra_credit": True, "attempted": scores[exercise] > 0}
    required = [key for key, ex in EXERCISES.items() if not ex.extra_credit]
    return {
        "submission": str(path),
        "variant": None if variant is None else variant.public(),
        "score": sum(scores[key] for key in required),
        "max_score": MAX_SCORE,
        "extra_credit": sum(v for key, v in scores.items() if key not in required),
        "exercises": exercises,
        "cells": [{"cell": "cell 49", "status": "timeout", "error": "timed out after 10 s",
                   "index": 48, "exercises": []}] if "FAKE:cell-timeout" in code else [],
    }

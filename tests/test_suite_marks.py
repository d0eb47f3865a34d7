"""The runner collects the hidden suites' marks the same with pytest's stand-in
(`autograder.suites.marks`, where pytest is not imported: `check`) as with pytest itself."""

from __future__ import annotations

import json
import subprocess
import sys

from autograder.runner import collect

SCRIPT = """
import json, sys
from autograder.runner import collect
tests = [[t.exercise, t.name, t.points] for t in collect()]
print(json.dumps({"tests": tests, "pytest": "pytest" in sys.modules}))
"""


def test_the_marks_are_the_same_without_pytest():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          check=True)
    without = json.loads(done.stdout)
    assert without["pytest"] is False  # the stand-in was used, and is gone
    assert "pytest" in sys.modules  # this process: the real one
    assert without["tests"] == [[t.exercise, t.name, t.points] for t in collect()]
    assert len(without["tests"]) > 20

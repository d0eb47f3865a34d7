"""The grading pipeline for one submission, in one place.

    read the submission -> run its cells in a sandbox -> run the hidden suites
    -> diagnose the exercises that lost points -> score and report

Student code only ever runs inside the sandbox; the suites, the reference and the
diagnoses run here and see plain data.
"""

from __future__ import annotations

from pathlib import Path

from autograder.diagnoses import diagnose_submission
from autograder.report import build_report
from autograder.runner import run_tests
from autograder.student import Student
from autograder.submission import SubmittedCell, read_content, read_submission


def grade_submission(path: Path | str, *, limits=None, pool=None) -> dict:
    """Grade the `.ipynb` or `.py` file at `path`; the report of CONTRACT section 2.

    Raises `autograder.submission.SubmissionError` when the file cannot be read as a
    submission (missing, empty, broken JSON, another assignment's notebook).
    """
    cells = read_submission(path)  # 1. the student's cells, in order
    return grade_cells(cells, submission=str(path), limits=limits, pool=pool)


def grade_content(
    content: bytes | str | dict, *, name: str, limits=None, pool=None
) -> dict:
    """Like `grade_submission` for contents shipped without a file: the bytes or text of a
    notebook or `.py` file, or a notebook already decoded from JSON. `name` is reported as
    the submission and its suffix says `.ipynb` or `.py`."""
    return grade_cells(read_content(content, name=name), submission=name, limits=limits,
                       pool=pool)


def grade_cells(
    cells: list[SubmittedCell], *, submission: str, limits=None, pool=None
) -> dict:
    """Run the submission's cells in a fresh sandbox and grade them."""
    from autograder.sandbox import Cell, Sandbox

    sandboxed = [Cell(source=c.source, label=c.label, first_line=c.first_line) for c in cells]
    with Sandbox(sandboxed, limits=limits, pool=pool) as sandbox:
        outcomes = sandbox.start()  # 2. run the cells; a failing cell does not stop the rest
        student = Student(sandbox)
        results = run_tests(student)  # 3. the hidden suites, compared in this process
        diagnoses = diagnose_submission(  # 4. probe the exercises that lost points
            student, results, cells=cells, outcomes=outcomes,
            forbidden_imports=set(sandbox.forbidden_imports),
        )
        output, warnings = sandbox.output, list(sandbox.warnings)
        refused = sorted(sandbox.forbidden_imports)
        isolation = sandbox.isolation
    if refused:
        warnings.append(f"the submission tried to import {', '.join(refused)}; refused")
    report = build_report(  # 5. score and report
        submission, results, diagnoses, cells=cells, outcomes=outcomes, output=output,
        warnings=warnings,
    )
    report["isolation"] = isolation  # "unsafe-none" only when asked for; warnings say so
    return report

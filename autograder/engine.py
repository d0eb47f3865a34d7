"""The grading pipeline for one submission, in one place.

    read the submission -> leave out the lesson's demonstrations and self-checks
    -> run its cells in a sandbox -> read the weights of the lesson's picture -> run the
    hidden suites -> mark the answers left as released (not-answered) -> diagnose the
    exercises that lost points -> score and report

Student code only ever runs inside the sandbox; the suites, the reference and the
diagnoses run here and see plain data. The lesson's demonstrations and self-checks, as
released, run only in the student's own Jupyter: no grade depends on them (`skipping`), and
the feedback page draws the causal heatmap from the weights read here (`heatmap`). Every
step grades against the `variant` it is given (`autograder.variants`: the student's own
numbers and hidden inputs; the lesson's by default), never against the variant the notebook
claims to show.
"""

from __future__ import annotations

from pathlib import Path

from autograder.skipping import split
from autograder.student import Student
from autograder.submission import SubmittedCell, read_content, read_submission
from autograder.variants import DEFAULT, Variant

# The environment variable the notebook's *Your numbers* cell reads the student id from, set
# in the sandbox to the id the submission is graded as (as JupyterHub sets JUPYTERHUB_USER):
# a notebook that works its answers out from its numbers works them out for its owner.
STUDENT_ID_VARIABLE = "SDPA_STUDENT_ID"
# What a submission printed or warned while the hidden tests called it is the student's text
# about the hidden inputs (`autograder.withheld`): it is said that there was some, never what.
WITHHELD_OUTPUT = ("your code printed or warned while the hidden tests called it; that output "
                   "is withheld, as it was written on hidden inputs: the exercises' "
                   "self-checks show it on the lesson's examples")


def grade_submission(path: Path | str, *, limits=None, pool=None,
                     variant: Variant = DEFAULT) -> dict:
    """Grade the `.ipynb` or `.py` file at `path`; the report of CONTRACT section 2.

    Raises `autograder.submission.SubmissionError` when the file cannot be read as a
    submission (missing, empty, broken JSON, another assignment's notebook).
    """
    cells = read_submission(path)  # 1. the student's cells, in order
    return grade_cells(cells, submission=str(path), limits=limits, pool=pool, variant=variant)


def grade_content(
    content: bytes | str | dict, *, name: str, limits=None, pool=None,
    variant: Variant = DEFAULT,
) -> dict:
    """Like `grade_submission` for contents shipped without a file: the bytes or text of a
    notebook or `.py` file, or a notebook already decoded from JSON. `name` is reported as
    the submission and its suffix says `.ipynb` or `.py`."""
    return grade_cells(read_content(content, name=name), submission=name, limits=limits,
                       pool=pool, variant=variant)


def load() -> None:
    """Import what grading needs once the cells have run (the hidden suites, the diagnoses,
    the report): `check` does it in a thread while a warm sandbox forks its worker and runs
    the cells, instead of before; `grade_cells` imports them itself otherwise."""
    from autograder import diagnoses, heatmap, report  # noqa: F401 - deferred: see above
    from autograder.runner import collect
    from autograder.variants import shown  # noqa: F401 - deferred: see above

    collect()


def _student_id_cell(variant: Variant):
    """A first cell, run before the student's: the id the submission is graded as."""
    from autograder.sandbox import Cell  # deferred: numpy, after `check` starts the zygote

    source = (f"import os as _os\n_os.environ[{STUDENT_ID_VARIABLE!r}] = "
              f"{variant.student!r}\ndel _os\n")
    return Cell(source=source, label="the grader's setup", first_line=0)


def grade_cells(
    cells: list[SubmittedCell], *, submission: str, limits=None, pool=None,
    variant: Variant = DEFAULT, skip_lesson: bool = True,
) -> dict:
    """Run the submission's cells in a fresh sandbox and grade them. `skip_lesson=False` runs
    the lesson's demonstrations and self-checks too (the tests compare the two)."""
    from autograder.sandbox import Cell, Sandbox  # deferred: numpy, as above

    cells, skipped = split(cells) if skip_lesson else (cells, [])  # 1b. what grading runs
    sandboxed = [Cell(source=c.source, label=c.label, first_line=c.first_line) for c in cells]
    setup = [_student_id_cell(variant)] if variant.student else []
    with Sandbox(setup + sandboxed, limits=limits, pool=pool) as sandbox:
        outcomes = sandbox.start()[len(setup):]  # 2. run the cells, the student's own reported
        # deferred: `check` imports these while the cells run (`load`)
        from autograder.diagnoses import diagnose_submission, unanswered
        from autograder.heatmap import HEATMAP_CELL, causal_weights
        from autograder.report import build_report
        from autograder.runner import run_tests
        from autograder.variants.shown import shown_label

        student = Student(sandbox, variant)
        # what the notebook says it showed (reported, not used), read before any hidden call
        # could set it: a call's doings are the student's words about hidden inputs
        shown = shown_label(student)
        # 3. the picture's weights, for the feedback page, on the lesson's public example:
        # read before any hidden call too, or the weights could carry what a call saw
        heatmap = (causal_weights(student)
                   if any(c.grade_id == HEATMAP_CELL for c in skipped) else None)
        results = run_tests(student)  # 4. the hidden suites, compared in this process
        results = unanswered.mark(results, cells)  # answers still as released: not-answered
        diagnoses = diagnose_submission(  # 5. probe the exercises that lost points
            student, results, cells=cells, outcomes=outcomes,
            forbidden_imports=set(sandbox.forbidden_imports),
        )
        output, warnings = sandbox.output, list(sandbox.warnings)
        if sandbox.calls_printed:
            warnings.append(WITHHELD_OUTPUT)
        refused = sorted(sandbox.forbidden_imports)
        isolation = sandbox.isolation
    if refused:
        warnings.append(f"the submission tried to import {', '.join(refused)}; refused")
    if shown is not None and shown != variant.label:
        warnings.append(f"the notebook shows the numbers of variant {shown}, but it was graded "
                        f"as {variant.text()}, with that variant's numbers")
    report = build_report(  # 6. score and report
        submission, results, diagnoses, cells=cells, outcomes=outcomes, output=output,
        warnings=warnings, variant=variant,
    )
    report["variant"]["shown"] = shown  # what the notebook said it showed, if it said
    report["isolation"] = isolation  # "unsafe-none" only when asked for; warnings say so
    report["skipped"] = [{"cell": c.label, "index": c.index, "grade_id": c.grade_id,
                          "tag": c.lesson_tag, "exercise": c.exercise} for c in skipped]
    if heatmap is not None:
        report["heatmap"] = heatmap
    return report

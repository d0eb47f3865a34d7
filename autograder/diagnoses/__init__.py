"""Diagnoses: the misconception behind each failed exercise, found by probing behaviour.

`diagnose_submission` gives each exercise that lost points the codes of CONTRACT section 3
that apply; an exercise with full marks gets none, except the codes of its own cells that
did not run cleanly (`timeout`, `crashed`, ...: a cell that hung after defining its names).
One module per exercise (`ex1`, `ex2`, `ex3`, `ex4`, with `misconceptions` modelling
attention's mistakes and `checks` those of exercise 3's two checks), `failures` and `modules` for
codes read from how the code failed (a cell's error, a module the grader does not have),
`explanations` for what the report says about a failed test a diagnosis explains,
`unanswered` for answers still as the release has them (`not-answered`). Every
student value here is plain data and none can raise: what is not numbers matches nothing.
"""

from __future__ import annotations

from autograder.diagnoses import ex1, ex2, ex3, ex4
from autograder.diagnoses.codes import CODES, ordered
from autograder.diagnoses.failures import cell_codes
from autograder.diagnoses.modules import find_missing_modules
from autograder.diagnoses.unanswered import CODE as NOT_ANSWERED
from autograder.diagnoses.unanswered import stub_raised, stubs
from autograder.exercises import EXERCISES, NAME_TO_EXERCISE
from autograder.runner import not_attempted
from autograder.sandbox import StudentError

PROBES = {"ex1": ex1.diagnose, "ex2": ex2.diagnose, "ex3": ex3.diagnose,
          "ex4": ex4.diagnose}
_CRASHES = ("crashed", "missing-name", "timeout", "memory-limit")

__all__ = ["CODES", "diagnose_submission"]


def _probe(key, student) -> set[str]:
    """The exercise's behavioural codes; none if the student's process gave up answering."""
    try:
        return PROBES[key](student)
    except StudentError:
        return set()


def _crashes_explained(failed, cell_codes) -> bool:
    """Every crash was an exception raised in a test call (say, a matmul of transposed
    shapes), none a dead process or a cell that failed to run."""
    crashed = [r for r in failed if "crashed" in r.diagnoses]
    return "crashed" not in cell_codes and all(r.raised for r in crashed)


def diagnose_submission(
    student, results, *, cells=(), outcomes=(), forbidden_imports=()
) -> dict[str, list[str]]:
    """Exercise -> diagnosis codes, in the contract's order.

    results: the runner's TestResults; cells and outcomes: what ran when the submission
    was loaded; forbidden_imports: modules the submission tried to import.
    """
    # the cells' stubs, parsed only when a cell's error may be one's (full marks: never)
    found = stubs(cells) if stub_raised(outcomes) else {}
    from_cells = cell_codes(cells, outcomes, forbidden_imports, found)
    for names in find_missing_modules(cells, outcomes, results).values():
        for name in names:
            from_cells[NAME_TO_EXERCISE[name]].add("missing-module")
    diagnoses = {}
    for key, exercise in EXERCISES.items():
        failed = [r for r in results if r.exercise == key and not r.passed]
        own = [r for r in results if r.exercise == key]
        if exercise.extra_credit and not_attempted(own):
            diagnoses[key] = []  # an optional exercise left alone: nothing to explain
            continue
        if not failed:
            # Full marks, but a cell of the exercise hung, crashed or did not parse: said
            # wherever the score shows, not hidden behind it.
            diagnoses[key] = ordered(from_cells[key])
            continue
        codes = {code for r in failed for code in r.diagnoses} | from_cells[key]
        if forbidden_imports and codes & set(_CRASHES):
            codes.add("forbidden-import")
        if all(NOT_ANSWERED in r.diagnoses for r in failed):
            diagnoses[key] = ordered(codes)  # nothing written that a probe could explain
            continue
        behaviour = _probe(key, student)
        if behaviour and _crashes_explained(failed, from_cells[key]):
            codes.discard("crashed")  # an exception that a misconception explains
        diagnoses[key] = ordered(codes | behaviour)
    return diagnoses

"""`sdpa-course demo`: the instructor round trip on a throwaway course.

init -> release -> a class of typical submissions -> grade (gradebook, feedback, class
report) -> a short table of results and the paths to open.

The class: the answer key; one submission per misconception of the catalogue (CONTRACT
section 3) and one hostile submission, each built from the answer key with the student's
code replaced by a case of the engine's corpus (`autograder.corpus`); and one notebook with
broken JSON, to show that a submission the kit cannot grade is reported, never scored 0.

The demo drives the whole kit, so it sits on top beside `cli`: it may import `course`,
`grading`, `reports` and `autograder.corpus`; only `cli` imports it.
"""

from __future__ import annotations

import ast
import copy
import secrets
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from autograder.corpus import cases
from autograder.exercises import MAX_SCORE
from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK
from sdpa_course.course.create import init_course
from sdpa_course.course.material import notebook_path
from sdpa_course.course.release import release_assignment
from sdpa_course.grading.grade import grade_course
from sdpa_course.reports.records import FAILED, GRADED

ANSWER_KEY_STUDENT = "answer-key"
BROKEN_STUDENT = "broken-json"
HOSTILE_CASE = "patched-numpy"


def demo_cases() -> list:
    """One mistake case per diagnosis code (first in corpus order), plus the hostile one."""
    chosen, covered = [], set()
    for case in cases():
        codes = {code for codes in case.diagnoses.values() for code in codes}
        if case.kind == "mistake" and codes and not codes <= covered and len(codes) == 1:
            chosen.append(case)
            covered |= codes
        elif case.name == HOSTILE_CASE:
            chosen.append(case)
    return chosen


def _defined_names(statement: ast.stmt) -> set[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    targets = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def notebook_from_source(answer_key, source: str):
    """The answer key with its answer cells holding `source` instead of the model answers.

    Each top-level statement goes to the answer cell that defines the same names in the key
    (imports and helpers go with the next statement that has a home); a file that does not
    parse goes whole into the first answer cell.
    """
    nb = copy.deepcopy(answer_key)
    answer_cells = [c for c in nb.cells
                    if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]
    home = {}
    for index, cell in enumerate(answer_cells):
        for statement in ast.parse(cell.source).body:
            for name in _defined_names(statement):
                home.setdefault(name, index)
    pieces: list[list[str]] = [[] for _ in answer_cells]
    try:
        statements = ast.parse(source).body
    except SyntaxError:
        pieces[0].append(source)
    else:
        lines = source.splitlines(keepends=True)
        waiting: list[str] = []
        for statement in statements:
            start = min([statement.lineno,
                         *(d.lineno for d in getattr(statement, "decorator_list", []))])
            text = "".join(lines[start - 1: statement.end_lineno])
            homes = [home[n] for n in _defined_names(statement) if n in home]
            waiting.append(text)
            if homes:
                pieces[min(homes)].extend(waiting)
                waiting = []
        pieces[-1].extend(waiting)
    for cell, piece in zip(answer_cells, pieces, strict=True):
        cell.source = "\n".join(p.rstrip("\n") for p in piece) if piece else "# (left empty)"
    return nb


def build_class(course: Path, answer_key_path: Path) -> dict[str, object]:
    """Put the demo class under submitted/; return each student's corpus case (or None)."""
    answer_key = nbformat.read(str(answer_key_path), as_version=4)
    students: dict[str, object] = {ANSWER_KEY_STUDENT: None}
    notebooks = {ANSWER_KEY_STUDENT: answer_key}
    for case in demo_cases():
        students[case.name] = case
        notebooks[case.name] = notebook_from_source(answer_key, case.source)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S.000000 UTC", time.gmtime())
    for student, nb in notebooks.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(folder / f"{NOTEBOOK}.ipynb"))
        (folder / "timestamp.txt").write_text(stamp)
        # as `nbgrader submit` leaves it, so `nbgrader release_feedback` works on the demo too
        (folder / "submission_secret.txt").write_text(secrets.token_hex(64))
    broken = course / "submitted" / BROKEN_STUDENT / ASSIGNMENT
    broken.mkdir(parents=True, exist_ok=True)
    (broken / f"{NOTEBOOK}.ipynb").write_text('{"cells": [{"cell_type": "code", "source": "x = ')
    (broken / "timestamp.txt").write_text(stamp)
    students[BROKEN_STUDENT] = None
    return students


def _table(result, students: dict[str, object]) -> list[str]:
    rows = [f"{'submission':<26} {'score':>9}  {'expected':>8}  diagnoses / reason", "-" * 78]
    for student, record in result.records.items():
        case = students.get(student)
        expected = f"{case.expected_score:g}" if case is not None else (
            f"{MAX_SCORE:g}" if student == ANSWER_KEY_STUDENT else FAILED)
        if record["status"] == GRADED:
            score = f"{record['score']:g}/{record['max_score']:g}"
            notes = ", ".join(sorted({c for ex in record["exercises"].values()
                                      for c in ex.get("diagnoses") or []})) or "-"
        else:
            score, notes = "FAILED", record["error"]
        rows.append(f"{student:<26} {score:>9}  {expected:>8}  {notes[:80]}")
    return rows


def run_demo(workdir: Path | None = None, workers: int | None = None) -> int:
    started = time.monotonic()
    root = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="sdpa-demo-"))
    course = init_course(root / "course" if workdir is None else root)
    print(f"[1/4] course directory: {course}")
    release = release_assignment(course)
    print(f"[2/4] released for students: {release}")
    students = build_class(course, notebook_path("solutions"))
    print(f"[3/4] {len(students)} submissions under {course / 'submitted'}: the answer key, "
          f"{len(students) - 3} typical mistakes, 1 hostile, 1 broken notebook")
    print("[4/4] grading (sdpa-course grade) ...")
    result = grade_course(course, workers=workers, progress_stream=sys.stderr)
    print()
    print("\n".join(_table(result, students)))
    feedback = course / "feedback"
    example = next((s for s, c in students.items()
                    if c is not None and result.records[s]["status"] == GRADED
                    and result.records[s]["score"] < MAX_SCORE), ANSWER_KEY_STUDENT)
    print()
    print(f"Graded {len(result.records)} submissions in {time.monotonic() - started:.1f} s. "
          "Open:")
    print(f"  class report      {result.reports['class report']}")
    print(f"  scores (CSV)      {result.reports['scores (CSV)']}")
    print(f"  feedback, e.g.    {feedback / example / ASSIGNMENT / f'{NOTEBOOK}.html'}")
    print(f"  gradebook         {course / 'gradebook.db'} (nbgrader formgrader / export)")
    print(f"  the course        {course} (cd there, then: sdpa-course grade --json)")
    unexpected = [s for s in result.failed if s != BROKEN_STUDENT]
    if unexpected:
        print(f"Unexpected failures: {', '.join(unexpected)}", file=sys.stderr)
        return 1
    return 0

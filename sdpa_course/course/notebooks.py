"""Build the generated notebooks from their jupytext text source.

`source/<assignment>/<notebook>.py` (jupytext `py:percent`, with nbgrader cell metadata) is the
one source of truth. From it, `sdpa-course build` writes

* `source/<assignment>/<notebook>.ipynb`: the nbgrader source notebook (no outputs, cell ids
  derived from grade_ids and positions, so a rebuild is byte-identical);
* `solutions/<assignment>/<notebook>.ipynb`: the answer key, that is the release as nbgrader
  shapes it (locks, checksums, grade_ids) with every answer cell filled in from the source,
  solution markers removed. A copy in `submitted/<student>/<assignment>/` is therefore a valid
  submission. The written answer keeps its model answer and mark scheme, for the graders;
* `autograder/lesson_cells.py`: the grade_id, tag and source digest of each cell tagged
  "demo" or "self-check", the cells grading leaves out (`autograder.skipping`). The build
  refuses a tagged cell that defines a name a cell that runs when grading reads.

The release itself is built by nbgrader (`sdpa-course release`), not here.
"""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import jupytext
import nbformat
from nbgrader.preprocessors import (
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ComputeChecksums,
    LockCells,
)

from autograder.skipping import (
    DEMO,
    SELF_CHECK,
    cell_names,
    lesson_problems,
    source_digest,
)
from sdpa_course.assignment import (
    ASSIGNMENT,
    METADATA_KEY,
    NO_TEXT_SOURCE,
    NOTEBOOK,
    TEXT_SOURCE,
)
from sdpa_course.errors import KitError
from sdpa_course.nbgrader_ext.clear_solutions import ExerciseClearSolutions

BEGIN_SOLUTION = "BEGIN SOLUTION"
END_SOLUTION = "END SOLUTION"
BEGIN_HIDDEN_TESTS = "BEGIN HIDDEN TESTS"
END_HIDDEN_TESTS = "END HIDDEN TESTS"

CELL_METADATA_KEYS = ("jupyter", "nbgrader", "tags")  # folded code, grade ids, "demo" cells

REBUILD_COMMAND = "sdpa-course build (or: make notebooks)"


def text_source_path(root: Path) -> Path:
    return Path(root) / TEXT_SOURCE


def source_notebook_path(root: Path) -> Path:
    return Path(root) / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"


def answer_key_path(root: Path) -> Path:
    return Path(root) / "solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"


def lesson_cells_path(root: Path) -> Path:
    return Path(root) / "autograder" / "lesson_cells.py"


def _tag(cell) -> str | None:
    tags = cell.metadata.get("tags") or []
    found = [tag for tag in (DEMO, SELF_CHECK) if tag in tags]
    return found[0] if found else None


def lesson_cells_module(release_nb: nbformat.NotebookNode, text_source: str) -> str:
    """`autograder/lesson_cells.py` for a release-form notebook: what grading may skip."""
    code = [cell for cell in release_nb.cells if cell.cell_type == "code"]
    problems = lesson_problems([(cell.metadata.get("nbgrader", {}).get("grade_id"),
                                 cell.source, _tag(cell)) for cell in code])
    if problems:
        raise KitError("the notebook's tagged cells cannot all be skipped when grading: "
                       + "; ".join(problems))
    lines = ['"""The lesson\'s cells that grading leaves out: generated from '
             f"{text_source}", f"by {REBUILD_COMMAND}; do not edit.", "",
             "grade_id -> (tag, SHA-256 of the cell's source as released, the names it binds),",
             'read by `autograder.skipping`."""', "", "SKIPPABLE = {"]
    for cell in code:
        tag = _tag(cell)
        if tag:
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            names = textwrap.wrap(" ".join(f'"{name}",' for name in
                                           sorted(cell_names(cell.source).defines)),
                                  width=88, break_on_hyphens=False)
            lines += [f'    "{grade_id}": (', f'        "{tag}", "{source_digest(cell.source)}",',
                      "        (", *(f"            {line}" for line in names), "        )),"]
    return "\n".join(lines + ["}", ""])


def _cell_id(cell: nbformat.NotebookNode, index: int) -> str:
    """A stable id: the grade_id when the cell has one, else its kind and position."""
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    return grade_id or f"{cell.cell_type}-{index:02d}"


def _generated_note(role: str, text_source: str) -> dict:
    return {
        "generated": True,
        "role": role,
        "generated_from": text_source,
        "do_not_edit": f"Generated file: edit {text_source} and rebuild with {REBUILD_COMMAND}.",
    }


def source_notebook(text: str) -> nbformat.NotebookNode:
    """The nbgrader source notebook for a jupytext py:percent text: clean and deterministic."""
    parsed = jupytext.reads(text, fmt="py:percent")
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": dict(parsed.metadata["kernelspec"]),
        "language_info": {"name": "python"},
    }
    for index, cell in enumerate(parsed.cells):
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(cell.source)
        elif cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(cell.source)
        else:
            new = nbformat.v4.new_raw_cell(cell.source)
        # nbgrader's and Jupyter's keys are content; jupytext's are layout hints for the text.
        for key in CELL_METADATA_KEYS:
            if key in cell.metadata:
                new.metadata[key] = copy.deepcopy(cell.metadata[key])
        new.id = _cell_id(new, index)
        nb.cells.append(new)
    ids = [cell.id for cell in nb.cells]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate cell ids (grade_ids?) in the notebook source: {duplicates}")
    nbformat.validate(nb)
    return nb


def _without_markers(source: str) -> str:
    """Keep a cell's solutions, drop the solution markers and any hidden-test region."""
    kept = []
    in_hidden = False
    for line in source.split("\n"):
        if BEGIN_HIDDEN_TESTS in line:
            in_hidden = True
        elif END_HIDDEN_TESTS in line:
            in_hidden = False
        elif not in_hidden and BEGIN_SOLUTION not in line and END_SOLUTION not in line:
            kept.append(line)
    return "\n".join(kept)


def release_form(source_nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The source as generate_assignment shapes it (stubs, locks, checksums), without a
    gradebook: nbgrader's own preprocessors, in the order GenerateAssignment runs them."""
    nb = copy.deepcopy(source_nb)
    resources: dict = {}
    for step in (LockCells, ExerciseClearSolutions, ClearOutput, ComputeChecksums,
                 ClearHiddenTests, ClearMarkScheme, ComputeChecksums):
        nb, resources = step().preprocess(nb, resources)
    return nb


def answer_key_notebook(source_nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The answer key: the release with every solution cell filled in from the source.

    Cell metadata (locks, checksums, grade_ids) is exactly the release's, as in a real
    submission; only the sources of solution cells differ.
    """
    key = release_form(source_nb)
    for key_cell, source_cell in zip(key.cells, source_nb.cells, strict=True):
        if key_cell.metadata.get("nbgrader", {}).get("solution"):
            key_cell.source = _without_markers(source_cell.source)
    return key


def _write(nb: nbformat.NotebookNode, path: Path) -> Path:
    nbformat.validate(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    return path


def build_notebooks(root: Path) -> list[Path]:
    """Write the source notebook and the answer key from the text source under root."""
    root = Path(root)
    text_path = text_source_path(root)
    if not text_path.is_file():
        raise KitError(NO_TEXT_SOURCE.format(path=text_path))
    relative = text_path.relative_to(root).as_posix()
    source_nb = source_notebook(text_path.read_text(encoding="utf-8"))
    source_nb.metadata[METADATA_KEY] = _generated_note("nbgrader source notebook", relative)
    key = answer_key_notebook(source_nb)
    key.metadata[METADATA_KEY] = _generated_note("answer key", relative)
    written = [_write(source_nb, source_notebook_path(root)), _write(key, answer_key_path(root))]
    module = lesson_cells_path(root)
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(lesson_cells_module(key, relative), encoding="utf-8")
    return written + [module]

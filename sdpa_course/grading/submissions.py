"""The submissions under `submitted/<student>/<assignment>/`, and what makes one gradeable.

Checked here, before anything is written: the notebook is there, is valid notebook JSON, and
belongs to this assignment (carries at least one of its nbgrader cells). Edited or deleted
graded cells are not fatal: nbgrader restores them from the gradebook; they are reported.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import nbformat

from sdpa_course.errors import GradingFailed

TIMESTAMP_FILE = "timestamp.txt"


@dataclass(frozen=True)
class Submission:
    student: str
    folder: Path  # submitted/<student>/<assignment>
    notebook: Path  # folder / "<notebook>.ipynb"

    def fingerprint(self) -> str:
        """Changes when the student submits again (notebook bytes or timestamp)."""
        digest = hashlib.sha256()
        for path in (self.notebook, self.folder / TIMESTAMP_FILE):
            digest.update(path.read_bytes() if path.is_file() else b"<missing>")
            digest.update(b"\0")
        return digest.hexdigest()


def find_submissions(submitted_dir: Path, assignment: str, notebook: str) -> list[Submission]:
    """Every `submitted/<student>/<assignment>/` folder, sorted by student id."""
    if not submitted_dir.is_dir():
        return []
    found = []
    for student_dir in sorted(submitted_dir.iterdir()):
        folder = student_dir / assignment
        if student_dir.name.startswith(".") or not folder.is_dir():
            continue
        found.append(Submission(student_dir.name, folder, folder / f"{notebook}.ipynb"))
    return found


def read_submitted_notebook(submission: Submission, cell_ids: set[str], grade_ids: set[str],
                            locked_sources: dict[str, str] | None = None):
    """The notebook and the warnings worth telling the instructor; GradingFailed if hopeless.

    `cell_ids` are the assignment's answer and graded cells (one must be present for the
    notebook to be this assignment's); `grade_ids` the graded ones (reported when deleted);
    `locked_sources` the release's locked cells (reported when edited: nbgrader restores them).
    """
    path = submission.notebook
    if not path.is_file():
        others = sorted(p.name for p in submission.folder.glob("*.ipynb"))
        found = f" (found: {', '.join(others)})" if others else ""
        raise GradingFailed(f"no {path.name} in the submission{found}")
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as err:  # broken JSON, not a notebook, unknown nbformat
        message = " ".join(str(err).split())[:300]
        raise GradingFailed(f"{path.name} is not a readable notebook: {message}") from None
    present = {
        cell.metadata.get("nbgrader", {}).get("grade_id")
        for cell in nb.cells
        if isinstance(cell.metadata.get("nbgrader"), dict)
    }
    if cell_ids and not (present & cell_ids):
        raise GradingFailed(
            f"{path.name} is not this assignment's notebook: none of its answer or graded "
            f"cells ({', '.join(sorted(cell_ids))}) is in it"
        )
    warnings = []
    edited = sorted(
        cell.metadata["nbgrader"]["grade_id"]
        for cell in nb.cells
        if isinstance(cell.metadata.get("nbgrader"), dict)
        and cell.metadata["nbgrader"].get("grade_id") in (locked_sources or {})
        and cell.source.strip() != locked_sources[cell.metadata["nbgrader"]["grade_id"]].strip()
    )
    if edited:
        warnings.append(f"locked cells edited and restored from the release: {', '.join(edited)}")
    missing = sorted(grade_ids - present)
    if missing:
        warnings.append(f"graded cells deleted and restored from the release: "
                        f"{', '.join(missing)}")
    return nb, warnings

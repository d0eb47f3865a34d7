"""The submissions under `submitted/<student>/<assignment>/`, and what makes one gradeable.

Checked here, before anything is written: the notebook is there, is valid notebook JSON, and
belongs to this assignment (carries at least one of its nbgrader cells). Edited or deleted
graded cells are not fatal: nbgrader restores them from the gradebook; they are reported.
nbgrader metadata the release did not give the cell (an id the assignment does not have, a
second copy of a cell, no id, not a dict) is removed, so the cell is graded as an ordinary
one, and reported: nbgrader itself would stop on it, and a student cannot add a graded cell.
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


def _strip_foreign_metadata(nb, known_ids: set[str]) -> list[str]:
    """Remove the nbgrader metadata of cells the release did not make; what was removed."""
    seen: set[str] = set()
    stripped = []
    for index, cell in enumerate(nb.cells):
        if "nbgrader" not in cell.metadata:
            continue
        meta = cell.metadata["nbgrader"]
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if isinstance(grade_id, str) and grade_id in known_ids and grade_id not in seen:
            seen.add(grade_id)
            continue
        if isinstance(grade_id, str) and grade_id in seen:
            stripped.append(f"{grade_id} (a second copy)")
        elif isinstance(grade_id, str):
            stripped.append(grade_id)
        else:
            stripped.append(f"cell {index + 1}")
        del cell.metadata["nbgrader"]
    return stripped


def read_submitted_notebook(submission: Submission, cell_ids: set[str], grade_ids: set[str],
                            locked_sources: dict[str, str] | None = None,
                            known_ids: set[str] | None = None):
    """The notebook and the warnings worth telling the instructor; GradingFailed if hopeless.

    `cell_ids` are the assignment's answer and graded cells (one must be present for the
    notebook to be this assignment's); `grade_ids` the graded ones (reported when deleted);
    `locked_sources` the release's locked cells (reported when edited: nbgrader restores them);
    `known_ids` every cell id the release has (default: all of the above). Any other nbgrader
    metadata is removed and reported.
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
    if known_ids is None:
        known_ids = set(cell_ids) | set(grade_ids) | set(locked_sources or {})
    stripped = _strip_foreign_metadata(nb, known_ids)
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
    if stripped:
        shown = ", ".join(" ".join(name.split())[:60] for name in stripped[:10])
        more = f" and {len(stripped) - 10} more" if len(stripped) > 10 else ""
        warnings.append(f"nbgrader metadata the release does not have, removed (graded as "
                        f"ordinary cells): {shown}{more}")
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

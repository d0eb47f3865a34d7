"""The submissions under `submitted/<student>/<assignment>/`, and what makes one gradeable.

Checked here, before anything is written: the notebook is there, is valid notebook JSON, and
belongs to this assignment (carries at least one of its nbgrader cells). Edited or deleted
graded cells are not fatal: nbgrader restores them from the gradebook; they are reported.
nbgrader metadata is the release's, not the student's: on the release's own cells it is put
back as released (points, grade, schema version...), and anywhere else (an id the assignment
does not have, a second copy of a cell, no id, not a dict) it is removed, so the cell is graded
as an ordinary one. Both are reported. nbgrader itself would stop on either, and a student can
neither add a graded cell nor change what one is worth.
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


# What nbgrader's metadata says about a cell; the rest (checksum) is bookkeeping.
_MEANING = ("grade_id", "grade", "solution", "locked", "task", "points", "cell_type",
            "schema_version")


def _release_metadata_only(nb, release: dict[str, dict | None]) -> tuple[list[str], list[str]]:
    """Give each of the release's cells (the first copy) its released nbgrader metadata
    (`release[id]`; None keeps the student's) and remove it from every other cell.
    Returns (ids whose metadata was put back, cells whose metadata was removed)."""
    seen: set[str] = set()
    restored, stripped = [], []
    for index, cell in enumerate(nb.cells):
        if "nbgrader" not in cell.metadata:
            continue
        meta = cell.metadata["nbgrader"]
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if isinstance(grade_id, str) and grade_id in release and grade_id not in seen:
            seen.add(grade_id)
            released = release[grade_id]
            if released is not None:
                if any(meta.get(k) != released.get(k) for k in _MEANING):
                    restored.append(grade_id)
                cell.metadata["nbgrader"] = nbformat.from_dict(dict(released))
            continue
        if isinstance(grade_id, str) and grade_id in seen:
            stripped.append(f"{grade_id} (a second copy)")
        elif isinstance(grade_id, str):
            stripped.append(grade_id)
        else:
            stripped.append(f"cell {index + 1}")
        del cell.metadata["nbgrader"]
    return restored, stripped


def _names(names: list[str]) -> str:
    shown = ", ".join(" ".join(name.split())[:60] for name in names[:10])
    return shown + (f" and {len(names) - 10} more" if len(names) > 10 else "")


def read_submitted_notebook(submission: Submission, cell_ids: set[str], grade_ids: set[str],
                            locked_sources: dict[str, str] | None = None,
                            release_metadata: dict[str, dict] | None = None):
    """The notebook and the warnings worth telling the instructor; GradingFailed if hopeless.

    `cell_ids` are the assignment's answer and graded cells (one must be present for the
    notebook to be this assignment's); `grade_ids` the graded ones (reported when deleted);
    `locked_sources` the release's locked cells (reported when edited: nbgrader restores them);
    `release_metadata` every release cell's nbgrader metadata by id, put back on that cell
    (without it: the ids above are the release's, their metadata left as submitted). Any
    other nbgrader metadata is removed. Both are reported.
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
    if release_metadata is None:
        release_metadata = dict.fromkeys({*cell_ids, *grade_ids, *(locked_sources or {})})
    restored, stripped = _release_metadata_only(nb, release_metadata)
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
    if restored:
        warnings.append(f"nbgrader metadata edited and put back as released: "
                        f"{_names(restored)}")
    if stripped:
        warnings.append(f"nbgrader metadata the release does not have, removed (graded as "
                        f"ordinary cells): {_names(stripped)}")
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

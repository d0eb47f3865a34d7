"""`OverwriteCellsInPlace`: nbgrader's OverwriteCells, with deleted graded cells put back.

nbgrader 0.9.6 (`OverwriteCells.add_missing_cells`) puts a deleted graded cell after the
source cell just before it, looked up among the submission's graded and answer cells only:
when that cell is a locked one (this notebook has a self-check before each graded cell) it
raises KeyError and the whole submission fails. Here the cell goes after the nearest earlier
source cell the submission still has, of any kind, or first if there is none. nbgrader also
builds the restored cell as a plain dict, on which its own `determine_grade` fails for a
hand-graded answer (`cell.metadata.nbgrader`): here it is a notebook node like the others.

What both look up of the release (its cells, in order, and which are graded, answers or
tasks) is read from the gradebook once per step object, not twice a submission (a dozen
queries): one object serves a whole grading run, which holds the course's run lock, and the
release does not change under it.
"""

from __future__ import annotations

from dataclasses import dataclass

import nbformat
from nbgrader.preprocessors import OverwriteCells

from sdpa_course.grading.gradebook import ReleasedCell


@dataclass(frozen=True)
class _Release:
    """The release's cells as the restoring steps read them, copied from the gradebook."""

    source_cells: dict[str, ReleasedCell]  # by name
    order: list[str]  # the source notebook's order
    solution_ids: frozenset[str]
    grade_cells: list[ReleasedCell]  # with max_score, in the gradebook's order
    task_cells: list[ReleasedCell]  # likewise


class OverwriteCellsInPlace(OverwriteCells):
    def _release(self) -> _Release:
        key = (self.db_url, self.notebook_id, self.assignment_id)
        cached = getattr(self, "_release_read", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        sources = {cell.name: ReleasedCell(cell.name, cell.cell_type, cell.locked,
                                           cell.checksum, cell.source)
                   for cell in source_nb.source_cells}
        release = _Release(
            source_cells=sources, order=[cell.name for cell in source_nb.source_cells],
            solution_ids=frozenset(cell.name for cell in source_nb.solution_cells),
            grade_cells=[ReleasedCell(c.name, c.cell_type, max_score=c.max_score)
                         for c in source_nb.grade_cells],
            task_cells=[ReleasedCell(c.name, c.cell_type, max_score=c.max_score)
                        for c in source_nb.task_cells])
        self._release_read = (key, release)
        return release

    def add_missing_grade_cells(self, nb, resources):
        release = self._release()
        source_cells, order = release.source_cells, release.order
        grade_cells = sorted(release.grade_cells,
                             key=lambda c: order.index(c.name) if c.name in order else len(order))
        for grade_cell in grade_cells:
            present = {
                cell.metadata["nbgrader"].get("grade_id"): index
                for index, cell in enumerate(nb.cells)
                if isinstance(cell.metadata.get("nbgrader"), dict)
            }
            if grade_cell.name in present or grade_cell.name not in source_cells:
                continue
            self.log.warning("Missing grade cell %s encountered, adding to notebook",
                             grade_cell.name)
            cell = nbformat.from_dict(self.missing_cell_transform(
                source_cells[grade_cell.name], grade_cell.max_score,
                is_solution=grade_cell.name in release.solution_ids,
            ))
            earlier = order[: order.index(grade_cell.name)]
            at = next((present[name] + 1 for name in reversed(earlier) if name in present), 0)
            nb.cells.insert(at, cell)
        return nb, resources

    def add_missing_task_cells(self, nb, resources):
        """nbgrader's own (a deleted task cell goes at the end), on the release read once."""
        release = self._release()
        submitted_ids = [cell["metadata"]["nbgrader"]["grade_id"] for cell in nb.cells
                         if "nbgrader" in cell["metadata"]]
        for task_cell in release.task_cells:
            if task_cell.name not in submitted_ids:
                nb.cells.append(self.missing_cell_transform(
                    release.source_cells[task_cell.name], task_cell.max_score, is_task=True))
        return nb, resources

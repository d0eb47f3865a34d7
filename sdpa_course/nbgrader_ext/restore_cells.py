"""`OverwriteCellsInPlace`: nbgrader's OverwriteCells, with deleted graded cells put back.

nbgrader 0.9.6 (`OverwriteCells.add_missing_cells`) puts a deleted graded cell after the
source cell just before it, looked up among the submission's graded and answer cells only:
when that cell is a locked one (this notebook has a self-check before each graded cell) it
raises KeyError and the whole submission fails. Here the cell goes after the nearest earlier
source cell the submission still has, of any kind, or first if there is none. nbgrader also
builds the restored cell as a plain dict, on which its own `determine_grade` fails for a
hand-graded answer (`cell.metadata.nbgrader`): here it is a notebook node like the others.
"""

from __future__ import annotations

import nbformat
from nbgrader.preprocessors import OverwriteCells


class OverwriteCellsInPlace(OverwriteCells):
    def add_missing_grade_cells(self, nb, resources):
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        source_cells = {cell.name: cell for cell in source_nb.source_cells}
        order = [cell.name for cell in source_nb.source_cells]  # the source notebook's order
        solution_ids = {cell.name for cell in source_nb.solution_cells}
        grade_cells = sorted(source_nb.grade_cells,
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
                is_solution=grade_cell.name in solution_ids,
            ))
            earlier = order[: order.index(grade_cell.name)]
            at = next((present[name] + 1 for name in reversed(earlier) if name in present), 0)
            nb.cells.insert(at, cell)
        return nb, resources

"""`fold_extra_cells`: how many of a notebook's cells a page shows, and one notice for the rest.

A page's cost grows with its cells, not only with their characters: 100,000 one-line cells
(11.5 MB, under the submission cap) made a 21.6 MB feedback page and a formgrader page that
took 114 s to render, the TA's Jupyter server answering nothing meanwhile. So a page shows

- every cell the release marked (a `grade_id`: the answers, the written answer, the graded
  and locked cells; nbgrader's autograde keeps only the release's ids, each once, so a
  student cannot mark cells of their own), and
- the first `OTHER_CELLS_SHOWN` other cells (the lesson's text and the student's own cells:
  the release has about 20, leaving more than 200 for the student),

and the rest are folded into one notice where the first of them was: "N further cells,
K characters, not shown". One pass over the cells; nothing is parsed. Folding never touches
grading: every cell was run and counted before a page is made.

`FoldExtraCells` folds the autograded notebook once it is graded (after `EngineGrades`), so
that formgrader reads a small file (nbformat's reading and nbconvert's copy of 100,000 cells
alone take seconds) and records what it folded in the notebook's `sdpa_course` metadata for
`grade`'s warning; `SafeNotebook` folds again whatever notebook a page is made of.
"""

from __future__ import annotations

from nbformat.v4 import new_markdown_cell
from nbgrader.preprocessors import NbGraderPreprocessor

from sdpa_course.assignment import METADATA_KEY

OTHER_CELLS_SHOWN = 250
# marked cells beyond these are folded too: autograde leaves at most the release's (26), and
# no page may show an unbounded number of cells whatever notebook it is made of
MARKED_CELLS_SHOWN = 1_000
FOLDED_KEY = "folded"  # in the notebook's `sdpa_course` metadata: {"cells": N, "chars": K}
PAGE_SCALE_KEY = "page_scale"  # in the exporter's resources["sdpa_course"]: see page_scale


def _chars(source) -> int:
    if isinstance(source, str):
        return len(source)
    if isinstance(source, list):
        return sum(len(part) if isinstance(part, str) else 0 for part in source)
    return 0


def page_scale(resources) -> float:
    """The share of the budgets a page is made with: 1, or less when a first rendering came
    out larger than a feedback page may be (`FeedbackExporter`)."""
    ours = resources.get(METADATA_KEY) if isinstance(resources, dict) else None
    scale = ours.get(PAGE_SCALE_KEY, 1.0) if isinstance(ours, dict) else 1.0
    return min(max(float(scale), 0.0), 1.0) if isinstance(scale, (int, float)) else 1.0


def _notice_counts(cell) -> tuple[int, int] | None:
    """(cells, characters) of a notice this module made, else None."""
    ours = cell.get("metadata", {}).get(METADATA_KEY)
    folded = ours.get(FOLDED_KEY) if isinstance(ours, dict) else None
    if not isinstance(folded, dict):
        return None
    cells, chars = folded.get("cells"), folded.get("chars")
    if (isinstance(cells, int) and isinstance(chars, int) and cells > 0 and chars >= 0
            and cell.get("source") == fold_notice(cells, chars)):
        return cells, chars
    return None


def fold_notice(cells: int, chars: int) -> str:
    """The notice's text (markdown, the kit's own words and two numbers)."""
    return (f"*[{cells:,} further cell{'s' if cells != 1 else ''}, {chars:,} characters, not "
            "shown: a page shows the notebook's graded and course cells and as many others as "
            "it has room for. Every cell was run and graded.]*")


def fold_extra_cells(cells: list, other_cells: int = OTHER_CELLS_SHOWN) -> tuple[list, int, int]:
    """(the cells a page shows, with one notice in place of the rest; how many cells were
    folded; their characters of source). `cells` is left as it was."""
    kept, marked_ids, others = [], set(), 0
    folded, chars, notice_at = 0, 0, None
    for cell in cells:
        nbgrader = cell.get("metadata", {}).get("nbgrader")
        grade_id = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
        if (isinstance(grade_id, str) and grade_id not in marked_ids
                and len(marked_ids) < MARKED_CELLS_SHOWN):
            marked_ids.add(grade_id)
            kept.append(cell)
        elif others < other_cells:
            others += 1
            kept.append(cell)
        else:
            if notice_at is None:
                notice_at = len(kept)
            counts = _notice_counts(cell)  # a notice folded again: the cells it stands for
            folded += counts[0] if counts else 1
            chars += counts[1] if counts else _chars(cell.get("source", ""))
    if folded:
        notice = new_markdown_cell(fold_notice(folded, chars))
        notice.metadata[METADATA_KEY] = {FOLDED_KEY: {"cells": folded, "chars": chars}}
        kept.insert(notice_at, notice)
    return kept, folded, chars


class FoldExtraCells(NbGraderPreprocessor):
    """Autograde's last word on a graded notebook: its extra cells folded (see the module doc),
    what was folded kept in the notebook's metadata (after `EngineGrades`, which writes it)."""

    def preprocess(self, nb, resources):
        nb.cells, folded, chars = fold_extra_cells(nb.cells)
        if folded:
            ours = nb.metadata.setdefault(METADATA_KEY, {})
            ours[FOLDED_KEY] = {"cells": folded, "chars": chars}
        return nb, resources

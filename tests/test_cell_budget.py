"""The pages' cell budget (`nbgrader_ext/cell_budget.py`): a notebook of any number of cells
makes a page of a bounded number, the graded and answer cells always among them, the rest
folded into one notice that says how many cells and characters it stands for.

Work is measured (cells and bytes of the page), never time: see tests/e2e for formgrader on a
real server."""

from __future__ import annotations

import copy
import re

import nbformat
import pytest
from grade_course_factory import ANSWER_KEY
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell
from traitlets.config import Config

from sdpa_course.assignment import METADATA_KEY
from sdpa_course.nbgrader_ext.cell_budget import (
    FOLDED_KEY,
    OTHER_CELLS_SHOWN,
    FoldExtraCells,
    fold_extra_cells,
)

MANY = 100_000
NOTICE = re.compile(r"([\d,]+) further cells?, ([\d,]+) characters, not shown")


def key():
    return nbformat.read(str(ANSWER_KEY), as_version=4)


def grade_ids(cells) -> list[str]:
    return [c.metadata["nbgrader"]["grade_id"] for c in cells
            if c.metadata.get("nbgrader", {}).get("grade_id")]


def one_line_cells(count: int) -> list:
    """`x7 = 7`...: built as nodes directly (nbformat's new_code_cell validates each, which
    takes minutes for 100,000)."""
    return [NotebookNode(cell_type="code", id=f"x{i}", metadata=NotebookNode(),
                         source=f"x{i} = {i}", outputs=[], execution_count=None)
            for i in range(count)]


def notices(cells) -> list[tuple[int, int]]:
    return [(int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
            for c in cells if c.cell_type == "markdown"
            for m in [NOTICE.search(c.source)] if m]


def test_the_budget_leaves_the_release_and_200_cells_of_the_students_own():
    release = key()
    unmarked = [c for c in release.cells if not c.metadata.get("nbgrader", {}).get("grade_id")]
    assert len(unmarked) + 200 <= OTHER_CELLS_SHOWN
    cells, folded, _ = fold_extra_cells(release.cells + one_line_cells(200))
    assert folded == 0 and len(cells) == len(release.cells) + 200


@pytest.fixture(scope="module")
def many():
    """100,000 one-line cells, made once (folding leaves them as they are)."""
    return one_line_cells(MANY)


@pytest.mark.parametrize("where", ["end", "start", "between every answer"])
def test_extra_cells_fold_into_one_notice_and_every_graded_cell_stays(where, many):
    nb = key()
    extra = many
    if where == "end":
        cells = nb.cells + extra
    elif where == "start":  # pushing the answers beyond the budget: they stay all the same
        cells = extra + nb.cells
    else:
        step = MANY // len(nb.cells)
        cells = [c for i, cell in enumerate(nb.cells)
                 for c in (*extra[i * step:(i + 1) * step], cell)]
    shown, folded, chars = fold_extra_cells(cells)
    assert grade_ids(shown) == grade_ids(nb.cells)  # every answer and graded cell, in order
    others = [c for c in shown if not c.metadata.get("nbgrader", {}).get("grade_id")]
    assert len(others) == OTHER_CELLS_SHOWN + 1  # the budget and the one notice
    assert notices(shown) == [(folded, chars)]
    assert folded == len(cells) - len(shown) + 1
    on_page = {id(c) for c in shown}
    hidden = [c for c in cells if id(c) not in on_page]
    assert chars == sum(len(c.source) for c in hidden)


def test_forged_and_repeated_grade_ids_win_no_place_on_the_page():
    # autograde keeps only the release's ids, once each; the budget counts a repeated id as
    # another cell of the student's own all the same
    nb = key()
    [answer] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                == "ex1_answer"]
    copies = [copy.deepcopy(answer) for _ in range(5_000)]
    shown, folded, _ = fold_extra_cells(nb.cells + copies)
    assert len(shown) == len(nb.cells) + OTHER_CELLS_SHOWN - (
        len(nb.cells) - len(grade_ids(nb.cells))) + 1
    assert folded == 5_000 - (OTHER_CELLS_SHOWN - (len(nb.cells) - len(grade_ids(nb.cells))))


def test_a_notebook_within_the_budget_is_left_as_it_is():
    nb = key()
    nb.cells += one_line_cells(10)
    before = nbformat.writes(nb)
    nb, _ = FoldExtraCells()(nb, {})
    assert nbformat.writes(nb) == before
    assert FOLDED_KEY not in nb.metadata.get(METADATA_KEY, {})


def test_the_autograded_notebook_keeps_what_its_pages_fold():
    nb = key()
    nb.metadata[METADATA_KEY] = {"report": {"score": 20.0}}  # as EngineGrades leaves it
    nb.cells += one_line_cells(1_000)
    nb, _ = FoldExtraCells()(nb, {})
    folded = nb.metadata[METADATA_KEY][FOLDED_KEY]
    unmarked = sum(1 for c in key().cells if not c.metadata.get("nbgrader", {}).get("grade_id"))
    assert folded["cells"] == 1_000 - (OTHER_CELLS_SHOWN - unmarked)
    assert nb.metadata[METADATA_KEY]["report"] == {"score": 20.0}
    # a page folds it no further: the notice is not counted against the budget again
    again, more, _ = fold_extra_cells(nb.cells, OTHER_CELLS_SHOWN + 1)
    assert more == 0 and len(again) == len(nb.cells)


def test_hostile_cells_fold_without_an_error():
    nb = key()
    odd = [new_code_cell(""), new_markdown_cell(["a", "b"])]
    odd[0]["source"] = ["x", 3, None]  # what a schema-breaking notebook may hold
    odd[1].metadata["nbgrader"] = "not a dict"
    shown, folded, chars = fold_extra_cells(nb.cells + one_line_cells(OTHER_CELLS_SHOWN) + odd)
    assert folded >= 2 and chars >= 3 and notices(shown)


def formgrader_exporter():
    """nbconvert's HTMLExporter as formgrader builds it from a kit course's config."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    from sdpa_course.nbgrader_ext.config import configure

    config = Config()
    configure(config)
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    return HTMLExporter(config=config)


FORMGRADER_RESOURCES = {"assignment_id": "sdpa", "notebook_id": "attention",
                        "submission_id": "x", "index": 0, "total": 1, "base_url": "",
                        "student": "s", "last_name": "", "first_name": "",
                        "notebook_path": "x"}


def formgrader_page(nb) -> str:
    html, _ = formgrader_exporter().from_notebook_node(nb, resources=dict(FORMGRADER_RESOURCES))
    return html


def assert_a_bounded_page_with_every_answer(html: str, extra: int) -> None:
    assert len(html.encode()) < 1_000_000  # 44.6 MB for 100,000 cells before
    assert html.count('class="jp-Cell ') <= len(key().cells) + OTHER_CELLS_SHOWN + 1
    assert f"x{extra - 1} =" not in html.replace("&#32;", " ")
    found = NOTICE.search(html)
    assert found and int(found.group(1).replace(",", "")) > extra - OTHER_CELLS_SHOWN
    for grade_id in ("ex1_answer", "ex2_explain", "ex3_attention", "ex4_autograded"):
        assert grade_id in html


def test_formgraders_page_of_the_100000_cell_notebook_as_the_kit_leaves_it(many):
    # what formgrader reads: the autograded notebook, folded once graded (FoldExtraCells)
    nb = key()
    nb.cells += many
    nb, _ = FoldExtraCells()(nb, {})
    text = nbformat.writes(nb)
    assert len(text) < 500_000  # formgrader reads this, not 100,000 cells
    page = formgrader_page(nbformat.reads(text, 4))
    assert_a_bounded_page_with_every_answer(page, MANY)
    # the work of the answer key's own page, give or take its 250 one-line cells
    assert len(page) < 1.5 * len(formgrader_page(key()))


def test_formgraders_page_of_a_notebook_the_kit_did_not_fold_is_folded_all_the_same():
    # an autograded notebook of another kit or of a plain nbgrader: SafeNotebook folds it
    nb = key()
    nb.cells += one_line_cells(2_000)
    assert_a_bounded_page_with_every_answer(formgrader_page(nb), 2_000)

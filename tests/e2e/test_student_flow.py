"""A student in JupyterLab: open the release, type the answers, run everything, save.

One test, in named steps with a screenshot each (see browser_steps); the answers typed are the
answer key's cells, so the saved notebook must earn every automatic point.
"""

from __future__ import annotations

import json

import nbformat
import pytest
from class_course import ANSWER_KEY, STUDENT_COPY, run_tool
from jupyterlab_ui import (
    cell,
    editor_text,
    open_notebook,
    output_text,
    run_all_cells,
    save,
    type_code,
    type_markdown,
)
from playwright_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SELF_CHECKS = {  # grade_id of the self-check cell -> the exercise its message names
    "ex1_selfcheck": "Exercise 1",
    "ex2_selfcheck_softmax": "Exercise 2(a)",
    "ex2_selfcheck_numbers": "Exercise 2(b)",
    "ex3_selfcheck_attention": "Exercise 3(a)",
    "ex3_selfcheck_causal_mask": "Exercise 3(b)",
    "ex3_selfcheck_checks": "Exercise 3(c)",
    "ex4_selfcheck": "Exercise 4",
}
# What each self-check says about the untouched release, the stubs still in place.
UNANSWERED = {
    "ex1_selfcheck": "ex1_scores is still `...`: not answered yet.",
    "ex2_selfcheck_softmax": "softmax is not written yet (Exercise 2: write softmax() here).",
    "ex2_selfcheck_numbers": "p_unscaled is still `...`: not answered yet.",
    "ex3_selfcheck_attention": "attention is not written yet (Exercise 3: write attention() here).",
    "ex3_selfcheck_causal_mask":
        "causal_mask is not written yet (Exercise 3: write causal_mask() here).",
    "ex3_selfcheck_checks":
        "rows_sum_to_one is not written yet (Exercise 3: write rows_sum_to_one() here).",
    "ex4_selfcheck": "attention_blockwise is not written yet (Exercise 4: write "
                     "attention_blockwise() here).",
}
LOCKED_TO_TRY = ("setup", "ex1_autograded")  # one visible locked cell of each kind
WRITTEN_ANSWER = (
    "Unscaled, the gap of 8 saturates the softmax: the larger key gets 0.9997 and the smaller "
    "key's weight has slope w(1 - w) = 0.0003, so almost no gradient reaches it.\n"
    "\n"
    "Scaled by 1/sqrt(64), the gap is 1: the weights are 0.731 and 0.269 and the slope is "
    "0.197, hundreds of times larger, so both keys keep learning."
)


def grade_id(nb_cell) -> str | None:
    return nb_cell.metadata.get("nbgrader", {}).get("grade_id")


def cells_by_grade_id(notebook) -> dict[str, int]:
    return {grade_id(c): i for i, c in enumerate(notebook.cells) if grade_id(c)}


def answer_cells(notebook) -> list[str]:
    """grade_ids of the cells a student writes in (nbgrader's solution cells)."""
    return [grade_id(c) for c in notebook.cells
            if c.metadata.get("nbgrader", {}).get("solution")]


def test_a_student_completes_the_release_in_jupyterlab_and_earns_every_point(
        page, lab, graded_course, steps):
    release = nbformat.read(str(graded_course.release), as_version=4)
    key = nbformat.read(str(ANSWER_KEY), as_version=4)
    where = cells_by_grade_id(release)
    key_source = {grade_id(c): c.source for c in key.cells if grade_id(c)}

    with steps.step("open the release notebook in JupyterLab"):
        notebook = open_notebook(page, lab, STUDENT_COPY)
        expect(notebook.locator(".jp-Cell")).to_have_count(len(release.cells))

    with steps.step("run all cells of the untouched release"):
        run_all_cells(page, notebook)
        for check, message in UNANSWERED.items():
            expect(cell(notebook, where[check]).locator(".jp-OutputArea-output")).to_contain_text(
                message)
        heatmap = cell(notebook, where["ex3_heatmap"])
        expect(heatmap.locator(".jp-OutputArea-output")).to_contain_text("No picture yet")
        heatmap.scroll_into_view_if_needed()

    with steps.step("locked cells refuse edits and deletion"):
        for locked in LOCKED_TO_TRY:
            target = cell(notebook, where[locked])
            target.scroll_into_view_if_needed()
            before = editor_text(target)
            target.locator(".cm-content").click()
            page.keyboard.type("x = 1  # typed into a locked cell")
            page.keyboard.press("Enter")
            page.keyboard.press("Escape")
            assert editor_text(target) == before, f"the locked cell {locked} took the typing"
            target.locator(".jp-InputPrompt").click()  # select the cell in command mode
            page.keyboard.press("d")
            page.keyboard.press("d")  # JupyterLab's delete-cell shortcut
            expect(notebook.locator(".jp-Cell")).to_have_count(len(release.cells))
            assert editor_text(cell(notebook, where[locked])) == before
        # The same shortcut does delete an ordinary cell: a new one, inserted and removed.
        page.keyboard.press("b")
        expect(notebook.locator(".jp-Cell")).to_have_count(len(release.cells) + 1)
        page.keyboard.press("Escape")
        page.keyboard.press("d")
        page.keyboard.press("d")
        expect(notebook.locator(".jp-Cell")).to_have_count(len(release.cells))

    for answer in answer_cells(release):
        if answer == "ex2_explain":
            continue
        with steps.step(f"type the answer in {answer}"):
            target = cell(notebook, where[answer])
            target.scroll_into_view_if_needed()
            type_code(page, target, key_source[answer])
            assert editor_text(target) == key_source[answer]

    with steps.step("type the written answer in ex2_explain"):
        target = cell(notebook, where["ex2_explain"])
        target.scroll_into_view_if_needed()
        type_markdown(page, target, WRITTEN_ANSWER)
        expect(target.locator(".jp-RenderedMarkdown")).to_contain_text("hundreds of times larger")

    with steps.step("run all cells with the answers in"):
        run_all_cells(page, notebook)

    for check, exercise in SELF_CHECKS.items():
        with steps.step(f"the self-check {check} reports its checks pass"):
            target = cell(notebook, where[check])
            target.scroll_into_view_if_needed()
            expect(target.locator(".jp-OutputArea-output")).to_have_text(
                f"{exercise} self-check: these quick checks pass. "
                "More tests run when your work is graded.")

    with steps.step("the causal-attention heatmap renders as an image"):
        heatmap = cell(notebook, where["ex3_heatmap"])
        image = heatmap.locator(".jp-OutputArea-output img")
        expect(image).to_have_count(1)
        image.scroll_into_view_if_needed()
        expect(image).to_be_visible()
        width, height = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
        assert width > 200 and height > 200, f"the heatmap is {width}x{height} pixels"
        assert "No picture" not in output_text(heatmap)

    with steps.step("save the notebook"):
        save(page)
        saved = nbformat.read(str(graded_course.student_copy), as_version=4)
        for answer in answer_cells(release):
            typed = saved.cells[where[answer]].source
            expected = WRITTEN_ANSWER if answer == "ex2_explain" else key_source[answer]
            assert typed == expected, f"{answer} was saved as {typed!r}"
        for index, original in enumerate(release.cells):
            if original.metadata.get("nbgrader", {}).get("locked"):
                assert saved.cells[index].source == original.source, grade_id(original)

    with steps.step("the saved notebook earns every automatic point"):
        report = json.loads(run_tool(
            ["sdpa-course", "check", str(graded_course.student_copy), "--json"],
            cwd=graded_course.root))
        assert (report["score"], report["max_score"]) == (20.0, 20.0), report
        assert report["extra_credit"] == 4.0, report  # the optional exercise 4, typed too

"""The assignment notebook: its text source, the generated notebooks and the student release."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import nbformat
import numpy as np
import pytest
from grade_course_factory import released_course
from nbclient import NotebookClient

from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK, NUMBERS_CELL
from sdpa_course.course.notebooks import (
    answer_key_path,
    build_notebooks,
    lesson_cells_path,
    source_notebook_path,
    text_source_path,
)
from sdpa_course.nbgrader_ext.variants import COURSE_LINE

REPO = Path(__file__).resolve().parents[1]

# Exercise 4 is extra credit: its cell is worth 0 points, its score recorded as extra credit.
GRADED_POINTS = {"ex1_autograded": 3, "ex2_autograded": 6, "ex3_autograded": 11, "ex2_explain": 2,
                 "ex4_autograded": 0}
# The engine's expected values for hidden inputs (CONTRACT section 1): never in a student's copy.
HIDDEN_VALUES = ["0.7071", "0.707", "0.6698", "0.670", "0.3302", "0.330", "3.352", "0.000335",
                 "0.19661", "0.1966", "0.197", "0.99966"]
SELF_CHECK_IDS = ["ex1_selfcheck", "ex2_selfcheck_softmax", "ex2_selfcheck_numbers",
                  "ex3_selfcheck_attention", "ex3_selfcheck_causal_mask", "ex3_selfcheck_checks",
                  "ex4_selfcheck"]
UNANSWERED = ("not answered yet", "not written yet")
CLEAN_SELF_CHECK = "these quick checks pass. More tests run when your work is graded."


def nbgrader_meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def cell_by_id(nb, cell_id: str):
    return next(cell for cell in nb.cells if cell.id == cell_id)


def solution_regions(source: str) -> list[list[str]]:
    """The lines between each BEGIN SOLUTION / END SOLUTION pair."""
    regions, current = [], None
    for line in source.split("\n"):
        if "BEGIN SOLUTION" in line:
            current = []
        elif "END SOLUTION" in line:
            regions.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return regions


def execute(nb, cwd: Path):
    """Run a notebook top to bottom in a fresh kernel; raises on the first error."""
    env_path = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    with mock.patch.dict(os.environ, {"PATH": env_path}):  # the kernel inherits it; no one else
        NotebookClient(nb, timeout=120, kernel_name="python3",
                       resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def printed(cell) -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


@pytest.fixture(scope="module")
def source_nb():
    return nbformat.read(source_notebook_path(REPO), as_version=4)


@pytest.fixture(scope="module")
def answer_key():
    return nbformat.read(answer_key_path(REPO), as_version=4)


@pytest.fixture(scope="module")
def release_nb(tmp_path_factory):
    """The student's notebook as `init_course` + `release_assignment` made it: a copy of the
    session's released course (tests/grade_course_factory.py), made with those once."""
    course = released_course(tmp_path_factory.mktemp("course") / "course")
    return nbformat.read(course / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)


# --- generated files ---------------------------------------------------------------------------

def test_rebuilding_reproduces_the_committed_notebooks(tmp_path):
    text = text_source_path(tmp_path)
    text.parent.mkdir(parents=True)
    shutil.copyfile(text_source_path(REPO), text)
    written = build_notebooks(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        f"source/{ASSIGNMENT}/{NOTEBOOK}.ipynb", f"solutions/{ASSIGNMENT}/{NOTEBOOK}.ipynb",
        "autograder/lesson_cells.py"]
    for committed in (source_notebook_path(REPO), answer_key_path(REPO),
                      lesson_cells_path(REPO)):
        rebuilt = tmp_path / committed.relative_to(REPO)
        assert rebuilt.read_bytes() == committed.read_bytes(), (
            f"{committed.relative_to(REPO)} is stale: run `sdpa-course build` and commit it")


def test_generated_notebooks_say_how_to_rebuild_them(source_nb, answer_key):
    for nb in (source_nb, answer_key):
        note = nb.metadata["sdpa_course"]
        assert note["generated"] is True
        assert f"source/{ASSIGNMENT}/{NOTEBOOK}.py" in note["do_not_edit"]
        assert "sdpa-course build" in note["do_not_edit"]


def test_source_notebook_has_no_outputs_and_stable_cell_ids(source_nb):
    for index, cell in enumerate(source_nb.cells):
        expected = nbgrader_meta(cell).get("grade_id") or f"{cell.cell_type}-{index:02d}"
        assert cell.id == expected
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


# --- the source notebook -----------------------------------------------------------------------

def test_graded_cells_carry_the_engines_points(source_nb):
    graded = {nbgrader_meta(c)["grade_id"]: nbgrader_meta(c)["points"]
              for c in source_nb.cells if nbgrader_meta(c).get("grade")}
    assert graded == GRADED_POINTS


def test_autograded_cells_hold_no_test_code_and_no_values(source_nb):
    for grade_id in ("ex1_autograded", "ex2_autograded", "ex3_autograded", "ex4_autograded"):
        cell = cell_by_id(source_nb, grade_id)
        meta = nbgrader_meta(cell)
        assert cell.cell_type == "code"
        assert (meta["grade"], meta["locked"], meta["solution"]) == (True, True, False)
        assert "assert" not in cell.source and "import" not in cell.source
        assert not re.search(r"\d\.\d", cell.source), "no numbers in a graded cell"
        assert "graded" in cell.source


def test_written_answer_is_a_hand_graded_markdown_cell_with_a_mark_scheme(source_nb):
    cell = cell_by_id(source_nb, "ex2_explain")
    meta = nbgrader_meta(cell)
    assert cell.cell_type == "markdown"
    assert (meta["grade"], meta["solution"], meta["points"]) == (True, True, 2)
    [region] = solution_regions(cell.source)
    answer = "\n".join(region)
    assert "Model answer" in answer and "Mark scheme (2 points)" in answer


def test_every_answer_cell_is_named_after_its_exercise(source_nb):
    answer_ids = [nbgrader_meta(c)["grade_id"] for c in source_nb.cells
                  if nbgrader_meta(c).get("solution")]
    assert answer_ids == ["ex1_answer", "ex2_softmax", "ex2_numbers", "ex2_explain",
                          "ex3_attention", "ex3_causal_mask", "ex3_rows_sum_to_one",
                          "ex3_future_is_zero", "ex4_attention_blockwise"]


def test_student_names_are_defined_where_the_contract_says(source_nb):
    defines = {
        "ex1_answer": ["ex1_scores", "ex1_weights", "ex1_output"],
        "ex2_softmax": ["def softmax(z):"],
        "ex2_numbers": ["p_unscaled", "p_scaled", "grad_unscaled", "grad_scaled"],
        "ex3_attention": ["def attention(Q, K, V, mask=None):"],
        "ex3_causal_mask": ["def causal_mask(T):"],
        "ex3_rows_sum_to_one": ["def rows_sum_to_one(attn):"],
        "ex3_future_is_zero": ["def future_is_zero(attn):"],
        "ex4_attention_blockwise": ["def attention_blockwise(Q, K, V, causal=False, block=64):"],
    }
    for grade_id, names in defines.items():
        for name in names:
            assert name in cell_by_id(source_nb, grade_id).source


def test_notebook_never_imports_the_kit_nor_claims_all_tests_passed(source_nb):
    for cell in source_nb.cells:
        assert not re.search(r"\b(import|from)\s+(sdpa_ref|sdpa_course|autograder)\b",
                             cell.source)
        assert "all tests passed" not in cell.source.lower()
    for grade_id in SELF_CHECK_IDS:
        assert "import" not in cell_by_id(source_nb, grade_id).source


def test_lesson_numbers_are_taught(source_nb):
    text = "\n".join(c.source for c in source_nb.cells if c.cell_type == "markdown")
    for fact in ("0.9997", "0.731", "0.881", "variance", "O(T^2 d)", "O(T^2)", "FlashAttention",
                 "Self-attention", "Causal masking"):
        assert fact in text


def test_the_lesson_says_what_its_numbers_and_conventions_really_are(source_nb):
    """What a lecturer's reading found misleading (issue 15), said right, the numbers computed."""
    text = " ".join(" ".join(c.source for c in source_nb.cells if c.cell_type == "markdown")
                    .replace("# ", " ").split())
    # saturation starves every score, not only the losing key's: d w1 / d s1 = w1 w2
    assert "stop learning" not in text and "starves the winner and the query" in text
    # the model answer's two gradients: at the scaled score, and at the raw one (a further 1/8)
    def slope(gap):  # w (1 - w) of the smaller key's weight, softmax(gap, 0)
        smaller = 1 / (1 + np.exp(gap))
        return smaller * (1 - smaller)

    scaled, unscaled = slope(1.0), slope(8.0)  # 0.197 and 0.000335
    explain = cell_by_id(source_nb, "ex2_explain").source
    for said in (f"{unscaled:.6f}", f"{scaled:.3f}", f"{scaled / 8:.4f}",
                 f"{scaled / unscaled:.0f} times", f"{scaled / 8 / unscaled:.0f} times"):
        assert said in explain, said
    assert "Scaling prevents overflow\" earns nothing" in explain.replace("**", "\"")
    assert explain.count("**2 points**") == 2 and "**1 point**" in explain
    # the variance argument's assumption, other libraries' masks, rows with every key masked
    assert "**initialisation**" in text
    assert "True` = *may attend*" in text and "Annotated Transformer" in text
    assert "sdpa_ref.to_torch_mask" in text
    assert "gives NaN" in text and "zero weights" in text and "uniformly" in text
    # the projection example builds W_v with d_v, as its shape comment says
    heatmap = cell_by_id(source_nb, "ex3_heatmap").source
    assert "W_v = rng.normal(size=(d_model, d_v))" in heatmap
    assert "T, d_model, d_k, d_v = 8, 16, 8, 4" in heatmap


@pytest.mark.slow
def test_source_notebook_validates_with_nbgrader(tmp_path):
    # `nbgrader validate` exits 0 even when validation fails: read what it prints.
    shutil.copyfile(source_notebook_path(REPO), tmp_path / f"{NOTEBOOK}.ipynb")
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(bin_dir / "nbgrader"), "validate", f"{NOTEBOOK}.ipynb"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Success! Your notebook passes all the tests." in done.stdout, done.stdout + done.stderr
    assert "FAILED" not in done.stdout


# --- the release -------------------------------------------------------------------------------

def test_release_has_no_solution_code(source_nb, release_nb):
    release_text = json.dumps([c.source for c in release_nb.cells])
    for cell in source_nb.cells:
        for region in solution_regions(cell.source):
            for line in region:
                code = line.strip().lstrip("#").strip()
                if len(code) > 8:
                    assert code not in release_text, f"solution line leaked: {code!r}"


def test_release_has_no_hidden_tests_markers_or_mark_scheme(release_nb):
    text = "\n".join(c.source for c in release_nb.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS", "MARK SCHEME",
                   "Model answer", "Mark scheme"):
        assert marker not in text


def test_release_holds_no_reference_values_of_hidden_tests(release_nb):
    text = "\n".join(c.source for c in release_nb.cells)
    for value in HIDDEN_VALUES:
        assert value not in text, f"{value} (a hidden expected value) is in the release"


def test_release_stubs_name_their_exercise(release_nb):
    functions = {"ex2_softmax": "softmax", "ex3_attention": "attention",
                 "ex3_causal_mask": "causal_mask", "ex3_rows_sum_to_one": "rows_sum_to_one",
                 "ex3_future_is_zero": "future_is_zero",
                 "ex4_attention_blockwise": "attention_blockwise"}
    for grade_id, function in functions.items():
        number = grade_id[2]
        assert (f'raise NotImplementedError("Exercise {number}: write {function}() here")'
                in cell_by_id(release_nb, grade_id).source)
    for grade_id, names in (("ex1_answer", ["ex1_scores", "ex1_weights", "ex1_output"]),
                            ("ex2_numbers", ["p_unscaled", "p_scaled", "grad_unscaled",
                                             "grad_scaled"])):
        number = grade_id[2]
        lines = cell_by_id(release_nb, grade_id).source.split("\n")
        assert lines == [f"{name} = ...  # YOUR ANSWER HERE (Exercise {number})" for name in names]
    assert cell_by_id(release_nb, "ex2_explain").source == "YOUR ANSWER HERE"


def test_release_shows_four_separate_exercises_with_stub_self_check_and_graded_cell(release_nb):
    headings = [i for i, c in enumerate(release_nb.cells)
                if c.cell_type == "markdown" and re.search(r"^## Exercise \d", c.source, re.M)]
    assert len(headings) == 4
    assert "(optional, 4 points extra credit)" in release_nb.cells[headings[3]].source
    bounds = [*headings, len(release_nb.cells)]
    for number, (start, stop) in enumerate(zip(bounds, bounds[1:], strict=False), start=1):
        heading = release_nb.cells[start].source
        assert heading.startswith("---\n") and f"## Exercise {number}:" in heading
        ids = [c.id for c in release_nb.cells[start:stop]]
        assert any(nbgrader_meta(c).get("solution") for c in release_nb.cells[start:stop])
        assert any(i.startswith(f"ex{number}_selfcheck") for i in ids)
        assert f"ex{number}_autograded" in ids
    assert not any(nbgrader_meta(c).get("grade_id", "").startswith("ex")
                   for c in release_nb.cells[:headings[0]])


def test_release_runs_to_the_end_and_every_self_check_says_not_answered(release_nb, tmp_path):
    ran = execute(nbformat.from_dict(json.loads(json.dumps(release_nb))), tmp_path)
    for grade_id in SELF_CHECK_IDS:
        text = printed(cell_by_id(ran, grade_id))
        assert any(phrase in text for phrase in UNANSWERED), (grade_id, text)
        assert CLEAN_SELF_CHECK not in text
    heatmap = cell_by_id(ran, "ex3_heatmap")
    assert "No picture yet" in printed(heatmap)
    assert not any("image/png" in out.get("data", {}) for out in heatmap.outputs)
    assert "Not yet: Exercise 3" in printed(cell_by_id(ran, "ex3_verify"))


def test_answer_key_has_the_release_cells_and_metadata(release_nb, answer_key):
    assert [c.id for c in answer_key.cells] == [c.id for c in release_nb.cells]
    for key_cell, release_cell in zip(answer_key.cells, release_nb.cells, strict=True):
        assert key_cell.cell_type == release_cell.cell_type
        if nbgrader_meta(release_cell).get("grade_id") == NUMBERS_CELL:
            # the release also carries its course (numbers key, course id, exchange), and
            # so the checksum of that source
            assert (COURSE_LINE.sub("", key_cell.source)
                    == COURSE_LINE.sub("", release_cell.source))
            assert ({**nbgrader_meta(key_cell), "checksum": ""}
                    == {**nbgrader_meta(release_cell), "checksum": ""})
            continue
        assert key_cell.metadata == release_cell.metadata
        if not nbgrader_meta(release_cell).get("solution"):
            assert key_cell.source == release_cell.source


def test_answer_key_runs_passes_every_self_check_and_draws_the_heatmap(answer_key, tmp_path):
    ran = execute(nbformat.from_dict(json.loads(json.dumps(answer_key))), tmp_path)
    for grade_id in SELF_CHECK_IDS:
        text = printed(cell_by_id(ran, grade_id))
        assert CLEAN_SELF_CHECK in text, (grade_id, text)
    heatmap = cell_by_id(ran, "ex3_heatmap")
    assert any("image/png" in out.get("data", {}) for out in heatmap.outputs)
    weights = printed(heatmap).split("\n", 1)[1]  # the matrix, rounded, beside the picture
    assert weights.startswith("[[1.00 0.00 0.00") and weights.count("[") == 9
    verified = printed(cell_by_id(ran, "ex3_verify"))
    assert "rows_sum_to_one(attn)  -> True" in verified
    assert "future_is_zero(attn)   -> True" in verified and "Both structural facts hold" in verified
    for cell in ran.cells:
        if cell.cell_type == "code":
            assert not any(out.output_type == "error" for out in cell.outputs)
            assert not any(out.get("name") == "stderr" for out in cell.outputs), cell.id


def test_demonstrations_and_self_checks_are_tagged_and_locked(source_nb, release_nb):
    """Grading skips them by these tags (issue 30): every self-check and demonstration carries
    its tag, locked, and no other cell does; the release keeps the tags."""
    tagged = {cell.id: cell.metadata.get("tags") for cell in source_nb.cells
              if cell.metadata.get("tags")}
    assert {cid for cid, tags in tagged.items() if tags == ["self-check"]} == set(SELF_CHECK_IDS)
    assert {cid for cid, tags in tagged.items() if tags == ["demo"]} == {
        "demo_score_spread", "ex3_verify", "ex3_heatmap", "demo_attention_memory"}
    for cell in source_nb.cells:
        if cell.id in tagged:
            assert cell.cell_type == "code" and nbgrader_meta(cell)["locked"] is True
    released = {cell.id: cell.metadata.get("tags") for cell in release_nb.cells
                if cell.metadata.get("tags")}
    assert released == tagged

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
    assert all(mark in explain for mark in ("**2 points**", "**1 point**", "**0 points**"))
    # the variance argument's assumption, other libraries' masks, rows with every key masked
    assert "**initialisation**" in text
    assert "True` = *may attend*" in text and "Annotated Transformer" in text
    assert "(`~mask`)" in text
    assert "gives NaN" in text and "zero weights" in text and "uniformly" in text
    # the projection example builds W_v with d_v, as its shape comment says
    heatmap = cell_by_id(source_nb, "ex3_heatmap").source
    assert "W_v = rng.normal(size=(d_model, d_v))" in heatmap
    assert "T, d_model, d_k, d_v = 8, 16, 8, 4" in heatmap


def exercise_markdown(nb, number: int) -> str:
    """The markdown of Exercise `number`'s section: its heading to the next section's."""
    cells = [c.source for c in nb.cells if c.cell_type == "markdown"]
    start = next(i for i, c in enumerate(cells) if re.search(rf"^## Exercise {number}:", c, re.M))
    stop = next((i for i, c in enumerate(cells) if i > start and re.search(r"^##? ", c, re.M)),
                len(cells))
    return " ".join(" ".join(cells[start:stop]).split())


def test_the_notebook_never_points_students_to_the_kits_reference(source_nb):
    """Students do not have sdpa_ref and may not import it (issue 26): no cell names it."""
    for cell in source_nb.cells:
        assert "sdpa_ref" not in cell.source, cell.id


def test_exercise_3s_checks_are_described_as_the_grader_hands_them_matrices(source_nb):
    """A NaN row is broken in both facts (its sum, and its future weights): the grader hands
    it to both checks as broken, and each check still checks its own fact only (issue 26)."""
    from autograder.suites import test_ex3
    from autograder.variants import DEFAULT, variant_for

    text = exercise_markdown(source_nb, 3)
    assert "Each checks its own fact and nothing else." in text
    assert ("A row of NaN (what a `-inf` fill gives a fully masked row) breaks both facts: its "
            "sum is not 1, its weights above the diagonal are not 0.") in text
    assert "passes neither" not in text
    for variant in (DEFAULT, *(variant_for("ab" * 16, "sdpa", f"s{i}") for i in range(8))):
        matrices = test_ex3.check_matrices(variant)
        assert not any(np.isnan(attn).any() for attn, _ in matrices.correct)
        for broken, other in ((matrices.rows_broken, matrices.future_broken),
                              (matrices.future_broken, matrices.rows_broken)):
            for attn, what in broken:
                nan_rows = np.flatnonzero(np.isnan(attn).any(axis=-1))
                if not nan_rows.size:
                    continue
                T = attn.shape[0]
                assert np.isnan(attn[nan_rows]).all() and nan_rows.max() < T - 1, what
                assert any(attn is twin for twin, _ in other), what  # handed to both


def test_exercise_4_says_the_dtypes_the_grader_hands_it(source_nb):
    from autograder.suites import test_ex4
    from autograder.variants import DEFAULT

    dtypes = {array.dtype.name for calls in test_ex4.reference_inputs(DEFAULT).values()
              for call in calls for array in call[:3]}
    assert dtypes == {"float32", "float64"}
    assert "`Q`, `K` and `V` are float64 or float32 arrays" in exercise_markdown(source_nb, 4)


# --- the lab's length (issue 26): exercises 1-3 fit one 90-minute session ------------------

# Words of prose a 90-minute lab can hold: every markdown cell before Exercise 4, the written
# answer's model answer and mark scheme included, and Exercise 2's section (its heading to the
# next section) among them. Measured as issue 26 measured the 3,269 words it found.
LAB_PROSE_WORDS = 2_000
EX2_SECTION_WORDS = 450
SHORT_PARAGRAPH_LINES = 3  # "How this notebook works" and "Your numbers", as the source has them


def markdown_cells(text: str) -> list[str]:
    """The markdown cells of a jupytext py:percent source, in order, as the notebook has them."""
    import jupytext

    return [cell.source for cell in jupytext.reads(text, fmt="py:percent").cells
            if cell.cell_type == "markdown"]


def prose_words(markdown: str) -> int:
    """Words a reader meets: whitespace-separated tokens, nbgrader's solution markers left out."""
    return sum(len(line.split()) for line in markdown.splitlines()
               if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def lab_prose(text: str) -> tuple[list[str], list[str]]:
    """(the markdown cells before Exercise 4, those of Exercise 2's section)."""
    cells = markdown_cells(text)
    heading = [next(i for i, c in enumerate(cells) if re.search(rf"^## Exercise {n}:", c, re.M))
               for n in (2, 4)]
    after_ex2 = next(i for i, c in enumerate(cells) if i > heading[0]
                     and re.search(r"^##? (?!Exercise 2:)", c, re.M))
    return cells[:heading[1]], cells[heading[0]:after_ex2]


def test_prose_is_measured_the_way_issue_26_measured_it():
    """The counter, on a small source, counts what a reader reads (and the markers not)."""
    text = ("# %% [markdown]\n# # Title\n#\n# one two\n\n# %%\nx = 1  # code is not prose\n\n"
            "# %% [markdown]\n# ---\n# ## Exercise 2: e\n\n"
            "# %% [markdown]\n# ### BEGIN SOLUTION\n# a b c\n# ### END SOLUTION\n\n"
            "# %% [markdown]\n# ## 3. Next\n#\n# d\n\n"
            "# %% [markdown]\n# ---\n# ## Exercise 4: f\n# g h\n")
    before, ex2 = lab_prose(text)
    assert [prose_words(c) for c in before] == [4, 5, 3, 4]  # headings' marks count, as issue 26's
    assert sum(prose_words(c) for c in ex2) == 8


def test_the_core_lab_fits_one_session():
    text = text_source_path(REPO).read_text()
    before, ex2 = lab_prose(text)
    lab_words = sum(prose_words(c) for c in before)
    ex2_words = sum(prose_words(c) for c in ex2)
    assert lab_words <= LAB_PROSE_WORDS, f"{lab_words} words of prose before Exercise 4"
    assert ex2_words <= EX2_SECTION_WORDS, f"{ex2_words} words in Exercise 2's section"
    assert any("Model answer" in c for c in ex2)  # the mark scheme is counted with its section
    for opening in ("**How this notebook works.**", "## Your numbers"):
        [cell] = [c for c in before if opening in c]
        paragraph = cell[cell.index(opening):].split("\n\n")
        body = paragraph[1] if opening.startswith("#") else paragraph[0]
        assert len(body.splitlines()) <= SHORT_PARAGRAPH_LINES, (opening, body)


LAB_MINUTES = {1: 20, 2: 30, 3: 40}  # each part, its lesson and exercise together
TAKE_HOME = "45 to 90 minutes"  # Exercise 4, after the lab


def test_the_notebook_and_the_readme_say_how_long_each_part_takes():
    assert sum(LAB_MINUTES.values()) == 90
    intro = " ".join(markdown_cells(text_source_path(REPO).read_text())[0].split())
    readme = (REPO / "README.md").read_text()
    students = " ".join(readme[readme.index("## For students"):
                               readme.index("## For self-learners")].split())
    assert "This lab takes 90 minutes" in intro and "one 90-minute lab" in students
    for number, minutes in LAB_MINUTES.items():
        assert re.search(rf"\(\*\*Exercise {number}\*\*, [^)]*, {minutes} minutes\)", intro)
    assert ("Exercise 1 about 20 minutes, Exercise 2 about 30, Exercise 3 about 40"
            in students)
    assert "take-home extension" in intro and TAKE_HOME in intro
    assert "take-home extension" in students and TAKE_HOME in students


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

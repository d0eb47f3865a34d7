"""Reading a submission into cells: notebooks, .py files and the broken inputs students send."""

import json
from pathlib import Path

import pytest

from autograder.submission import (
    SubmissionError,
    python_cells,
    read_content,
    read_submission,
    replace_lone_surrogates,
    transform_magics,
)

ROOT = Path(__file__).resolve().parents[1]
ANSWER_KEY = ROOT / "solutions" / "sdpa" / "attention.ipynb"


def make_notebook(*cells, grade_ids=("ex1_answer", "ex1_autograded")):
    """A minimal nbformat-4 notebook: the given code cells after cells carrying grade_ids."""
    def code(source, grade_id=None, locked=False):
        meta = {}
        if grade_id:
            meta["nbgrader"] = {"grade_id": grade_id, "locked": locked, "solution": not locked,
                                "grade": False, "schema_version": 3}
        return {"cell_type": "code", "metadata": meta, "source": source, "outputs": [],
                "execution_count": None}

    tagged = [code("", gid, locked=gid.endswith("autograded")) for gid in grade_ids]
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
            "cells": [*tagged, *(code(c) if isinstance(c, str) else c for c in cells)]}


def test_answer_key_gives_every_code_cell_in_order():
    notebook = json.loads(ANSWER_KEY.read_text())
    code_sources = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    cells = read_submission(ANSWER_KEY)
    assert [c.source for c in cells] == [transform_magics(s) for s in code_sources]
    assert len(cells) == len(code_sources) > 10


def test_notebook_cells_know_their_exercise_and_lock_from_nbgrader_metadata():
    cells = read_submission(ANSWER_KEY)
    by_label = {c.label: c for c in cells}
    attention = next(c for label, c in by_label.items() if "ex3_attention" in label)
    graded = next(c for label, c in by_label.items() if "ex3_autograded" in label)
    setup = next(c for label, c in by_label.items() if "(setup)" in label)
    assert (attention.exercise, attention.locked) == ("ex3", False)
    assert (graded.exercise, graded.locked) == ("ex3", True)
    assert (setup.exercise, setup.locked) == (None, True)


def test_magics_become_plain_python_and_plain_code_is_untouched():
    assert "run_line_magic('matplotlib', 'inline')" in transform_magics("%matplotlib inline\n")
    assert "system('ls')" in transform_magics("!ls\n")
    plain = "x = 10 % 3\ny = x != 1\n"
    assert transform_magics(plain) == plain


def test_notebook_magic_cell_is_rewritten():
    cells = read_content(make_notebook("%timeit 1 + 1\nx = 1\n"), name="a.ipynb")
    assert "run_line_magic" in cells[-1].source and "x = 1" in cells[-1].source


def test_py_file_gives_each_top_level_statement_with_its_first_line():
    text = "import numpy as np\n\n\n@staticmethod\ndef f(x):\n    return x\n\nx = f(\n    1)\n"
    cells = python_cells(text)
    assert [(c.first_line, c.source.splitlines()[0]) for c in cells] == [
        (1, "import numpy as np"), (4, "@staticmethod"), (8, "x = f(")]
    assert cells[2].source == "x = f(\n    1)\n"


def test_statements_sharing_a_line_stay_in_one_cell():
    cells = python_cells("a = 1; b = 2\nc = 3\n")
    assert [c.source for c in cells] == ["a = 1; b = 2\n", "c = 3\n"]


def test_py_file_that_does_not_parse_is_passed_on_whole():
    text = "x = 1\ndef broken(:\n    pass\n"
    cells = read_content(text, name="s.py")
    assert len(cells) == 1 and cells[0].source == text and cells[0].first_line == 1


def test_invalid_notebook_json_is_refused_with_its_position(tmp_path):
    path = tmp_path / "attention.ipynb"
    path.write_text('{"cells": [\n  {"cell_type": "code",\n}')
    with pytest.raises(SubmissionError, match=r"not a valid notebook.*line 3"):
        read_submission(path)


def test_notebook_of_another_assignment_is_refused():
    other = make_notebook("x = 1", grade_ids=("hw2_q1", "hw2_q1_tests"))
    with pytest.raises(SubmissionError, match="another assignment.*hw2_q1"):
        read_content(other, name="hw2.ipynb")


def test_notebook_without_nbgrader_cells_is_refused():
    with pytest.raises(SubmissionError, match="none of its nbgrader cells"):
        read_content(make_notebook("x = 1", grade_ids=()), name="blank.ipynb")


def test_json_that_is_not_a_notebook_is_refused():
    with pytest.raises(SubmissionError, match="not a Jupyter notebook"):
        read_content('{"hello": 1}', name="a.ipynb")
    with pytest.raises(SubmissionError, match="no notebook object"):
        read_content("[1, 2]", name="a.ipynb")


@pytest.mark.parametrize("content", ["", "   \n\n", b""])
def test_empty_file_is_refused(content):
    with pytest.raises(SubmissionError, match="empty"):
        read_content(content, name="attention.py")


def test_missing_path_and_folder_are_refused(tmp_path):
    with pytest.raises(SubmissionError, match="no such file"):
        read_submission(tmp_path / "nope.ipynb")
    with pytest.raises(SubmissionError, match="is a folder"):
        read_submission(tmp_path)


def test_other_file_kinds_are_refused():
    with pytest.raises(SubmissionError, match=r"\.ipynb.*\.py.*not \.txt"):
        read_content("x = 1", name="answers.txt")
    with pytest.raises(SubmissionError, match="not UTF-8"):
        read_content(b"\xff\xfe\x00x", name="a.py")


def test_content_as_bytes_text_or_dict_reads_like_the_file():
    raw = ANSWER_KEY.read_bytes()
    from_file = read_submission(ANSWER_KEY)
    assert read_content(raw, name="attention.ipynb") == from_file
    assert read_content(raw.decode(), name="attention.ipynb") == from_file
    assert read_content(json.loads(raw), name="attention.ipynb") == from_file


def test_comments_and_strings_that_look_like_magics_stay_as_written():
    for source in ("x = 1  # why?\n", 's = """\n%d items\n!important\n"""\n'):
        assert transform_magics(source) == source


# -- student text is read in linear time, within size caps ---------------------------------------

IPYTHON_SYNTAX = [
    "%time x = 1\n", "%%time\nx = 1\ny = 2\n", "!pip install scipy\n", "x = !ls\n",
    "y = %time f()\n", "attention?\n", "for i in range(3):\n    %time f(i)\n",
    'def f():\n    """What does it do?\n    """\n    return 1\n',
    "x = 1\n%timeit attention(Q, K, V)\nprint('%d' % 3)\n",
    "s = '''\n%d items\n!bang\n'''\n%time g()\n", "   %matplotlib inline\nimport numpy as np\n",
    "%time f(1, \\\n  2)\nz = 3\n", "!echo 'it's\nx=1\n%time y\n",
    "a = 1\nattention??\nb = %who\n!ls \\\n -l\nx = (1,\n 2)?\n", "x?  \r\ny = 2",
]


@pytest.mark.parametrize("source", IPYTHON_SYNTAX)
def test_magics_are_rewritten_as_ipython_rewrites_them(source):
    from IPython.core.inputtransformer2 import TransformerManager

    assert transform_magics(source) == TransformerManager().transform_cell(source)


def test_a_cell_of_thousands_of_magics_is_rewritten_whole():
    """IPython's own loop re-reads the cell after each rewrite and gives up after 500."""
    rewritten = transform_magics("!ls\n" * 5000)
    assert rewritten.count("get_ipython().system('ls')") == 5000


@pytest.mark.parametrize("text", ["\n" * 400_000 + "x", " \n" * 200_000 + "?",
                                  ("=" + " " * 1000 + "x\n") * 400, "?" + " " * 400_000])
def test_looking_for_magics_is_linear_in_the_text(text):
    """With `\\s*` the search took 9 s on 40,000 newlines and grew with the square of the
    size: 400,000 would take about 15 minutes. Linear, it takes milliseconds."""
    import time

    from autograder.submission import _MAGIC_LINE

    start = time.perf_counter()
    _MAGIC_LINE.search(text)
    assert time.perf_counter() - start < 5


def test_only_so_much_text_goes_to_ipython(monkeypatch):
    from autograder import submission

    monkeypatch.setattr(submission, "MAX_MAGIC_CHARS", 100)
    cells = read_content(make_notebook("%time x = 1\n", "%time y = 2\n" + "z = 3\n" * 50),
                         name="a.ipynb")
    assert "run_line_magic" in cells[-2].source and cells[-1].source.startswith("%time")


def test_a_submission_larger_than_the_cap_is_refused(monkeypatch, tmp_path):
    from autograder import submission

    monkeypatch.setattr(submission, "MAX_SUBMISSION_BYTES", 1000)
    with pytest.raises(SubmissionError, match="larger than"):
        read_content("x = 1\n" * 500, name="a.py")
    path = tmp_path / "a.py"
    path.write_text("x = 1\n" * 500)
    with pytest.raises(SubmissionError, match="clear the notebook's outputs"):
        read_submission(path)


def test_a_py_file_nested_too_deeply_to_parse_is_one_cell():
    cells = python_cells("x = " + "(" * 100_000 + ")" * 100_000 + "\n")
    assert [cell.label for cell in cells] == ["the file"]


def test_half_a_surrogate_pair_is_read_as_a_replacement_character_everywhere():
    # JSON's "\ud83d" escape (a browser saves a broken emoji so) gives a str that no UTF-8
    # file, compiler or page can hold; `sdpa-course grade` once stopped the whole run on it.
    text = json.dumps(make_notebook("# half an emoji \ud83d\nx = '\udc00'"))
    assert "\\ud83d" in text
    sources = [cell.source for cell in read_content(text, name="a.ipynb")]
    assert "# half an emoji \ufffd\nx = '\ufffd'" in sources
    document = {"a\ud800": ["\udfff", {"k": "ok \U0001f600 \ud83d"}], "n": 1}
    assert replace_lone_surrogates(document) == 3
    assert document == {"a\ufffd": ["\ufffd", {"k": "ok \U0001f600 \ufffd"}], "n": 1}
    json.dumps(document, ensure_ascii=False).encode("utf-8")  # now writable


def test_a_cell_is_searched_for_magics_only_when_one_could_match():
    """`_may_hold_magic` skips the line-by-line search where it cannot match: every form of
    IPython syntax above passes it, and text without its characters never matches."""
    import itertools

    from autograder.submission import _MAGIC_LINE, _may_hold_magic

    assert all(_may_hold_magic(source) for source in IPYTHON_SYNTAX)
    pieces = ["x", " ", "\t", "\n", "\r", "=", "%", "!", "?", "#", "'"]
    for text in map("".join, itertools.product(pieces, repeat=4)):
        assert _may_hold_magic(text) or not _MAGIC_LINE.search(text), repr(text)


def test_a_notebook_source_with_lines_that_are_not_text_reads_them_as_text():
    nb = json.loads(ANSWER_KEY.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    cell["source"] = ["x = ", 1, "\n"]  # hostile JSON: a number among the lines
    assert read_content(nb, name="a.ipynb")[0].source == "x = 1\n"

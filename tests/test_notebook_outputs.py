"""The outputs the kit builds itself (`nbgrader_ext.outputs.new_output`, unchecked) are those
nbformat builds and checks: the same nodes, each valid against the notebook schema."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_output as nbformat_new_output

from sdpa_course.nbgrader_ext.autograde import (
    cell_outputs,
    graded_outputs,
    skipped_outputs,
)
from sdpa_course.nbgrader_ext.outputs import new_output
from sdpa_course.nbgrader_ext.safe_notebook import safe_output

CASES = [
    ("stream", None, {}),
    ("stream", None, {"name": "stderr", "text": "boom\n"}),
    ("display_data", {"image/png": "iVBORw0KGgo="}, {"metadata": {"image/png": {"alt": "x"}}}),
    ("display_data", {"text/plain": "a"}, {}),
    ("execute_result", {"text/plain": "1.5"}, {"execution_count": 1}),
    ("execute_result", {"text/plain": "1.5"}, {"metadata": {}, "execution_count": None}),
    ("error", None, {"ename": "ValueError", "evalue": "bad", "traceback": []}),
    ("error", None, {}),
]


@pytest.mark.parametrize(("kind", "data", "kwargs"), CASES)
def test_unchecked_output_is_the_one_nbformat_makes(kind, data, kwargs):
    ours = new_output(kind, data=data, **kwargs)
    assert ours == nbformat_new_output(kind, data=data, **kwargs)
    assert type(ours) is nbformat.NotebookNode
    assert all(type(v) is nbformat.NotebookNode for v in ours.values() if isinstance(v, dict))
    nbformat.validate(ours, ref=kind, version=4)


def test_unchecked_outputs_do_not_share_their_defaults():
    first, second = new_output("display_data"), new_output("display_data")
    first.data["text/plain"] = "changed"
    assert second.data == {}


def kit_outputs():
    """Every kind of output the kit builds for a graded notebook and a feedback page."""
    result = {"score": 1.5, "max_score": 3.0, "diagnoses": ["no-scaling"], "tests": [
        {"name": "weights", "score": 0.0, "max_score": 1.0, "passed": False,
         "message": "the weights are off"}]}
    yield from graded_outputs("ex1", result, 3.0)
    yield from cell_outputs({"cell": "cell 3", "text": "hi\n", "images": ["iVBORw0KGgo="]},
                            {"status": "error", "error": "ValueError: bad"})
    yield from skipped_outputs({"tag": "self-check", "exercise": "ex1"}, {"ex1": result})
    yield from skipped_outputs({"tag": "demonstration"}, {})
    hostile = [{"output_type": "stream", "name": "evil", "text": ["a", 1]},
               {"output_type": "error", "ename": 3, "evalue": None, "traceback": ["x"]},
               {"output_type": "execute_result", "execution_count": "7",
                "data": {"text/plain": ["1", "2"], "text/html": "<script>"},
                "metadata": {"image/png": {"alt": 5}}},
               {"output_type": "display_data", "data": {"image/png": "not base64 !",
                                                        "image/jpeg": "AAAA"},
                "metadata": {"image/jpeg": {"alt": "a picture", "width": "1 onload=x"}}},
               {"output_type": "display_data"}]
    for output in hostile:
        yield safe_output(output)


@pytest.mark.parametrize("output", list(kit_outputs()), ids=lambda o: o["output_type"])
def test_every_output_the_kit_builds_follows_the_schema(output):
    nbformat.validate(output, ref=output["output_type"], version=4)


def test_an_exercise_text_made_once_a_report_is_the_one_made_each_time():
    result = {"score": 1.0, "max_score": 3.0, "diagnoses": ["no-scaling"], "tests": [
        {"name": "scores", "score": 0.0, "max_score": 1.0, "passed": False,
         "message": "the scores are off " * 12}]}
    texts: dict = {}
    once = (graded_outputs("ex1", result, 3.0, texts)
            + skipped_outputs({"tag": "self-check", "exercise": "ex1"}, {"ex1": result}, texts)
            + graded_outputs("ex1", result, 1.0, texts))
    each = (graded_outputs("ex1", result, 3.0)
            + skipped_outputs({"tag": "self-check", "exercise": "ex1"}, {"ex1": result})
            + graded_outputs("ex1", result, 1.0))
    assert once == each and list(texts) == ["ex1"]
    assert "scaled to this cell's 1 points" in once[-2]["text"]
    assert "scaled to" not in once[0]["text"]

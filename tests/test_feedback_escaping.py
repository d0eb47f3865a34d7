"""Every field of the feedback page's template is escaped (or sanitised), held without a
browser: the real template, rendered by the kit's exporter from a notebook and a summary in
which every string the template shows is a hostile one, and the page parsed.

Two checks, each catching a dropped `| e`: the template's source, where every `{{ ... }}`
must end in an escaping or sanitising filter (or be one of the few that show only the
template's own text), new fields included; and the rendered page, in which no hostile string
may have become markup (no script, no event handler, no element or attribute it named), while
each still shows, as text, where its field is. The browser tests
(tests/e2e/test_feedback_pages.py) stay as a second line.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import nbformat
import pytest
from traitlets.config import Config

from sdpa_course.nbgrader_ext.config import TEMPLATES, configure_grading
from sdpa_course.nbgrader_ext.feedback_exporter import FeedbackExporter

TEMPLATE = TEMPLATES / "sdpa_feedback" / "index.html.j2"
# Filters that escape or sanitise what they are given (sdpa_course/nbgrader_ext/student_html.py,
# code_html.py; nbconvert's ansi2html escapes its text).
SAFE_FILTERS = ("e", "escape", "ansi2html", "markdown2html", "code_text", "highlight_code")
# Expressions that show only the template's own text, numbers or trusted markup.
OWN_TEXT = {
    "'stderr' if output.name == 'stderr' else 'stdout'",
    "'png' if png else 'jpeg'",
    "'pass' if t.passed else 'fail'",
    "'✓ passed' if t.passed else '✗ failed'",
    '"%g" | format(x | float)',  # a number (the float filter gives 0.0 for any other value)
    "fmt(got)", "fmt(cell.metadata.nbgrader.points)",  # the macro above: numbers
    "diagnoses(row.diagnoses)", "diagnoses(r.diagnoses)",  # macros that escape their fields
    "outputs(cell)",
    "resources.include_css('feedback.css')",  # the kit's own stylesheet
    # the heatmap's SVG and table, made from numbers by sdpa_course/reports/heatmap.py, which
    # escapes its one text (tests/test_skipping.py holds it)
    "v.heatmap",
}
# Set in the notebook but not shown by the view their cell has: an autograded cell with its
# results shows those, not its code, outputs or id; its score shows as a number (fmt), its own
# score only for extra credit; a results cell without results shows only its outputs.
NOT_SHOWN = {f"{where}.{field}" for where in ("results", "extra")
             for field in ("source", "grade_id", "stdout", "stderr", "text", "alt", "ename",
                           "evalue")} | {"results.score", "results.max_score",
                                         "unreported.source", "unreported.grade_id"}
FORBIDDEN_TAGS = {"script", "iframe", "object", "embed", "svg", "form", "hostile"}


def hostile(field: str) -> str:
    """A string that is markup wherever it is not escaped, naming its field as plain text."""
    return (f"FIELD[{field}] \"'><script>alert('{field}')</script><img src=x onerror=alert(1)>"
            f"<hostile data-field=\"{field}\"></hostile><a href=\"javascript:alert(1)\">x</a>"
            f"&amp; {{{{ 7*7 }}}}")


def test_every_field_of_the_template_ends_in_an_escaping_filter():
    expressions = re.findall(r"\{\{-?\s*(.*?)\s*-?\}\}", TEMPLATE.read_text(), re.S)
    assert len(expressions) > 40  # the template was read
    unsafe = []
    for expression in expressions:
        last_filter = expression.rsplit("|", 1)[1].strip() if "|" in expression else ""
        last_filter = re.match(r"\w*", last_filter).group()
        if expression not in OWN_TEXT and last_filter not in SAFE_FILTERS:
            unsafe.append(expression)
    assert not unsafe, f"template fields shown without escaping: {unsafe}"


def _diagnosis(where: str) -> dict:
    return {key: hostile(f"{where}.{key}") for key in ("code", "explanation", "anchor",
                                                        "section")}


def _cells(where: str) -> list[dict]:
    return [{key: hostile(f"{where}.{key}") for key in ("cell", "status", "error")}]


def _results_view(where: str, extra_credit: bool) -> dict:
    return {"view": "results", "result": {
        "exercise": hostile(f"{where}.exercise"), "heading": hostile(f"{where}.heading"),
        "score": hostile(f"{where}.score"), "max_score": hostile(f"{where}.max_score"),
        "extra_credit": extra_credit,
        "tests": [{"name": hostile(f"{where}.test.name"), "passed": passed,
                   "points": hostile(f"{where}.test.points"),
                   "message": hostile(f"{where}.test.message")} for passed in (True, False)],
        "diagnoses": [_diagnosis(f"{where}.diagnosis")],
        "cells": _cells(f"{where}.cells")}}


def _outputs(where: str) -> list:
    return [
        nbformat.v4.new_output("stream", name="stdout", text=hostile(f"{where}.stdout")),
        nbformat.v4.new_output("stream", name="stderr", text=hostile(f"{where}.stderr")),
        nbformat.v4.new_output("execute_result", data={"text/plain": hostile(f"{where}.text")},
                               execution_count=1),
        nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=",
                                                     "text/plain": "figure"},
                               metadata={"image/png": {"alt": hostile(f"{where}.alt")}}),
        nbformat.v4.new_output("error", ename=hostile(f"{where}.ename"),
                               evalue=hostile(f"{where}.evalue"), traceback=[]),
    ]


def _code_cell(view: dict, where: str, grade_id: str | None = None):
    cell = nbformat.v4.new_code_cell(hostile(f"{where}.source"))
    cell.metadata = {"sdpa_course": view}
    if grade_id is not None:
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "points": 5, "score": None}
    cell.outputs = _outputs(where)
    return cell


def hostile_page() -> tuple[str, list[str]]:
    """The feedback page of a notebook in which every field is hostile; the fields' names."""
    nb = nbformat.v4.new_notebook()
    written = nbformat.v4.new_markdown_cell(hostile("written.source"))
    written.metadata = {"sdpa_course": {"view": "written", "name": hostile("written.name"),
                                        "score": hostile("written.score"),
                                        "comment": hostile("written.comment")}}
    raw = nbformat.v4.new_raw_cell(hostile("raw.source"))
    nb.cells = [
        nbformat.v4.new_markdown_cell(hostile("lesson.source")),
        _code_cell(_results_view("results", extra_credit=False), "results",
                   grade_id=hostile("results.grade_id")),
        _code_cell(_results_view("extra", extra_credit=True), "extra",
                   grade_id=hostile("extra.grade_id")),
        _code_cell({"view": "results"}, "unreported", grade_id=hostile("unreported.grade_id")),
        written,
        _code_cell({"view": "kit", "label": hostile("kit.label")}, "kit"),
        _code_cell({"view": "answer"}, "answer", grade_id=hostile("answer.grade_id")),
        raw,
    ]
    summary = {
        "rows": [{"what": hostile("row.what"), "anchor": hostile("row.anchor"),
                  "score": hostile("row.score"), "diagnoses": [_diagnosis("row.diagnosis")],
                  "note": hostile("row.note"), "comment": hostile("row.comment")}],
        "late_penalty": hostile("summary.late_penalty"), "auto": hostile("summary.auto"),
        "extra_credit": hostile("summary.extra_credit"), "total": hostile("summary.total"),
        "pending": hostile("summary.pending"),
        "variant": {"graded": hostile("variant.graded"),
                    "shown_other": hostile("variant.shown_other"),
                    "label": hostile("variant.label")},
        "cells": _cells("summary.cells"),
    }
    resources = {"sdpa_course": {"summary": summary},
                 "nbgrader": {"notebook": hostile("nbgrader.notebook"),
                              "student": hostile("nbgrader.student"),
                              "assignment": hostile("nbgrader.assignment")}}
    config = Config()
    configure_grading(config)
    html, _ = FeedbackExporter(config=config).from_notebook_node(nb, resources=resources)
    fields = sorted(set(re.findall(r"FIELD\[([^\]]+)\]", repr((nb, resources)))))
    return html, fields


class Page(HTMLParser):
    """Every element, attribute and piece of text of a page."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def page() -> tuple[Page, list[str]]:
    html, fields = hostile_page()
    return Page(html), fields


def test_no_hostile_string_becomes_markup_on_the_page(page):
    parsed, _ = page
    assert parsed.tags and parsed.text  # a page was rendered
    forbidden = [tag for tag, _ in parsed.tags if tag in FORBIDDEN_TAGS]
    handlers = [(tag, name) for tag, attrs in parsed.tags for name in attrs
                if name.startswith("on") or name == "data-field"]
    scripted = [(tag, attrs) for tag, attrs in parsed.tags for value in attrs.values()
                if value and value.strip().lower().startswith("javascript:")]
    # markdown may hold an image: only the page's own data: figures may load anything
    stray_images = [attrs for tag, attrs in parsed.tags if tag == "img" and "src" in attrs
                    and not (attrs["src"] or "").startswith("data:image/")]
    assert not forbidden and not handlers and not scripted and not stray_images, (
        forbidden, handlers, scripted, stray_images)


def test_every_hostile_field_shows_as_text_where_it_belongs(page):
    """The checks above mean something only if each field was rendered: its name shows, as
    text or inside an attribute's value, never as markup."""
    parsed, fields = page
    assert len(fields) > 40
    shown = "".join(parsed.text) + "\n".join(
        value or "" for _, attrs in parsed.tags for value in attrs.values())
    missing = [field for field in fields
               if field not in NOT_SHOWN and f"FIELD[{field}]" not in shown]
    assert not missing, f"fields the page does not show: {missing}"


# -- the class report ---------------------------------------------------------------------------

def hostile_class() -> tuple[dict, dict, list[str]]:
    """(records, marks, missing) in which every string a student or the gradebook gives is
    hostile: ids, test names, diagnosis codes, reasons, cells, written answers' names."""
    graded, failed = hostile("student.graded"), hostile("student.failed")
    exercise = {"score": 1.0, "max_score": 2.0, "diagnoses": [hostile("diagnosis.code")],
                "tests": [{"name": hostile("test.name"), "passed": False}]}
    records = {
        graded: {"student": graded, "status": "graded", "score": 1.0, "max_score": 2.0,
                 "exercises": {"ex1": exercise}, "variant": {"label": hostile("variant")},
                 "stopped_cells": [hostile("stopped.cell")],
                 "check_by_hand": [hostile("check_by_hand")]},
        failed: {"student": failed, "status": "failed", "error": hostile("failed.error"),
                 "score": None, "max_score": 2.0, "exercises": {}},
    }
    marks = {graded: {"written": {hostile("written.name"): {"score": None, "max_score": 1.0}},
                      "timestamp": hostile("timestamp"), "seconds_late": 7200.0,
                      "late_penalty": 0.0}}
    return records, marks, [hostile("student.missing")]


def test_no_hostile_string_becomes_markup_in_the_class_report(tmp_path):
    from sdpa_course.reports.class_report import write_class_report

    records, marks, missing = hostile_class()
    paths = write_class_report(records, tmp_path / "report", hostile("assignment"),
                               marks=marks, missing=missing, notebook=hostile("notebook"),
                               note=hostile("note"))
    parsed = Page(paths["class report"].read_text(encoding="utf-8"))
    forbidden = [tag for tag, _ in parsed.tags if tag in FORBIDDEN_TAGS]
    handlers = [(tag, name) for tag, attrs in parsed.tags for name in attrs
                if name.startswith("on") or name == "data-field"]
    scripted = [(tag, attrs) for tag, attrs in parsed.tags for value in attrs.values()
                if value and value.strip().lower().startswith("javascript:")]
    assert not forbidden and not handlers and not scripted, (forbidden, handlers, scripted)
    shown = "".join(parsed.text) + "\n".join(
        value or "" for _, attrs in parsed.tags for value in attrs.values())
    fields = set(re.findall(r"FIELD\[([^\]]+)\]", repr((records, marks, missing))))
    fields = (fields | {"assignment", "notebook", "note"}) - {"variant"}  # only in scores.csv
    missing_fields = sorted(f for f in fields if f"FIELD[{f}]" not in shown)
    assert not missing_fields, f"fields the report does not show: {missing_fields}"

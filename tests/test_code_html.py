"""Code on every page of the kit is highlighted as Python, whatever a student's notebook names.

nbconvert takes the lexer from the notebook's `language_info.pygments_lexer`, the cell's
`magics_language` and a markdown fence's info string, all of them a student's to write; Pygments'
Scala lexer then backtracks for hours on an unterminated string of backslashes, and IPython's
lexer is quadratic on a line of dots. The feedback (in the grading process, with the class
waiting) and formgrader's page (in the TA's Jupyter server) must render regardless.
"""

from __future__ import annotations

import copy
import html
import re
import time
from pathlib import Path

import fake_engine
import nbformat
import nbgrader
import pytest
from grade_course_factory import answer_key, released_course, submit
from nbconvert import HTMLExporter

import sdpa_course.grading.grade as pipeline
from sdpa_course.course.directory import load_config
from sdpa_course.nbgrader_ext.code_html import (
    feedback_code_html,
    fence_html,
    highlight_code,
    plain_code_html,
    styled_classes,
)
from sdpa_course.nbgrader_ext.student_html import markdown_to_safe_html

BACKSLASHES = '"' + "\\" * 60  # the Scala lexer: 48 took minutes, each one more doubles it
DOTS = "." * 20_000  # IPython's lexer: 9 s, and four times that for twice as many
# a bound hours away from what the hostile inputs cost before, not a speed test
BOUND_SECONDS = 30


def hostile_notebook():
    """The answer key, with the Scala lexer named in the notebook's and a cell's metadata,
    and the texts those lexers (and IPython's) choke on in code and in a markdown fence."""
    nb = copy.deepcopy(answer_key())
    nb.metadata.setdefault("language_info", {})["pygments_lexer"] = "scala"
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id == "ex1_answer":
            cell.source += f"\nhostile = lambda: 0  # {BACKSLASHES}\n# {DOTS}"
        elif grade_id == "ex2_softmax":
            cell.metadata["magics_language"] = "scala"
            cell.source += f"\n# {BACKSLASHES}"
        elif grade_id == "ex2_explain":
            cell.source += f"\n\n```scala\n{BACKSLASHES}\n```\n\n```tads3\n//{BACKSLASHES}\n```\n"
    return nb


def test_a_fence_in_another_language_is_escaped_text():
    began = time.perf_counter()
    rendered = markdown_to_safe_html(f"```scala\n{BACKSLASHES}\n```\n")
    assert time.perf_counter() - began < BOUND_SECONDS
    assert '<pre><code class="language-scala">"' + "\\" * 60 in rendered
    assert "<span" not in rendered
    assert fence_html("<b>", "x<y") == '<pre><code class="language-x&lt;y">&lt;b&gt;</code></pre>\n'


def test_python_is_highlighted_whatever_the_metadata_names():
    began = time.perf_counter()
    page = highlight_code(f"f = lambda: 0\n# {DOTS}", "scala", {"magics_language": "scala"})
    assert time.perf_counter() - began < BOUND_SECONDS
    assert '<span class="k">lambda</span>' in page  # a keyword to Python, a name to Scala
    fence = markdown_to_safe_html("```python\nf = lambda: 0\n```\n")
    assert '<span class="k">lambda</span>' in fence


FEEDBACK_CSS = (Path(__file__).parents[1] / "sdpa_course" / "nbgrader_ext" / "templates"
                / "sdpa_feedback" / "feedback.css")
SPAN = re.compile(r'<span class="([^"]*)">')


def stylesheet_highlighting() -> dict[str, str]:
    """Token class -> declarations, from the `.highlight` rules of the feedback stylesheet."""
    rules = {}
    for selector, body in re.findall(r"([^{}]+)\{([^}]*)\}", FEEDBACK_CSS.read_text()):
        selector = re.sub(r"/\*.*?\*/", "", selector, flags=re.S).strip()
        if selector.startswith(".highlight "):
            for name in re.findall(r"\.([\w-]+)", selector.removeprefix(".highlight ")):
                rules[name] = body
    return rules


def test_the_feedback_stylesheet_styles_every_class_its_code_carries():
    declared = {name: body.replace(" ", "") for name, body in stylesheet_highlighting().items()}
    assert declared == {name: style.replace(" ", "") for name, style in styled_classes().items()}


def test_feedback_code_has_spans_only_on_what_its_stylesheet_colours():
    source = 'def f(x, y):\n    return x[0] + "a" * 2  # why\n\tpass <b>&\n'
    page = feedback_code_html(source)
    classes = set(SPAN.findall(page)) - {""}
    assert {"k", "nf", "mi", "o", "s2", "c1"} <= classes
    assert classes <= set(styled_classes())  # no span of a name, a bracket, a space
    shown = re.search(r"<pre>(.*)</pre>", page, re.S).group(1)
    assert html.unescape(re.sub(r"<[^>]+>", "", shown)) == source  # the same text
    assert set(re.findall(r"</?(\w+)", page)) == {"div", "pre", "span"}  # <b> is text
    full = highlight_code(source)
    assert '<span class="n">x</span>' in full  # formgrader's pages keep Pygments' own spans
    assert len(page) < len(full)


def test_folded_code_is_escaped_text_with_quotes_as_they_are():
    hostile = '</pre><script>alert("1")</script> & \'x\''
    assert plain_code_html(hostile) == (
        '&lt;/pre&gt;&lt;script&gt;alert("1")&lt;/script&gt; &amp; \'x\'')


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = released_course(tmp_path_factory.mktemp("lexers") / "course")
    submit(course, "lex", hostile_notebook())
    pipeline.grade_course(course, engine=fake_engine.grade_submission, workers=1)
    return course


def test_feedback_of_a_notebook_naming_a_hostile_lexer_is_written(course):
    page = (course / "feedback" / "lex" / "sdpa" / "attention.html").read_text()
    assert '<span class="k">lambda</span>' in page
    assert '<code class="language-scala">' in page


def formgrader_page(course: Path, nb) -> str:
    """`nb` rendered as formgrader renders a submission for a TA: an HTMLExporter made from
    the course's config (`configure_safe_pages`) with nbgrader's formgrade template."""
    config = load_config(course)
    templates = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [str(templates)]
    page, _ = HTMLExporter(config=config).from_notebook_node(nb, resources={
        "base_url": "/", "index": 0, "total": 1, "notebook_id": "attention",
        "assignment_id": "sdpa", "submission_id": "lex", "mathjax_url": ""})
    return page


def autograded(course: Path):
    return nbformat.read(str(course / "autograded" / "lex" / "sdpa" / "attention.ipynb"), 4)


def test_formgraders_page_highlights_as_python(course):
    nb = autograded(course)
    assert nb.metadata.language_info.pygments_lexer == "scala"  # kept from the submission
    began = time.perf_counter()
    page = formgrader_page(course, nb)
    assert time.perf_counter() - began < BOUND_SECONDS
    assert '<span class="k">lambda</span>' in page
    assert '<code class="language-scala">' in page


def test_formgraders_page_of_megabytes_of_code_stays_small_and_shows_the_written_answer(course):
    """5.5 MB of code took 175 s and made an 87 MB page: a TA's Jupyter server stalls. 2.2 MB
    here (seven times the page's budget; about 35 MB of page unbounded) decides as well."""
    from sdpa_course.nbgrader_ext.redact import MAX_PAGE_CHARS

    nb = autograded(course)
    written = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                   == "ex2_explain")
    written.source = "My own answer: scaling keeps the softmax out of saturation."
    nb.cells[2:2] = [nbformat.v4.new_code_cell("x = (1, 2)\n" * 20_000) for _ in range(10)]
    page = formgrader_page(course, nb)
    assert len(page) < 40 * MAX_PAGE_CHARS  # highlighting multiplies the text by about 16
    text = html.unescape(re.sub(r"<[^>]+>", "", page))  # the note is highlighted as code
    assert "more characters not shown" in text
    assert "My own answer: scaling keeps the softmax out of saturation." in page

"""Markdown a student wrote, as every page of the kit renders it: sanitised, maths as MathML,
linear in time on hostile input."""

from __future__ import annotations

import re
import time

import pytest
from hostile_notebook import PAYLOADS

from autograder.diagnoses.codes import heading_anchor
from sdpa_course.nbgrader_ext.student_html import (
    MATHML_NAMESPACE,
    MAX_MARKDOWN_CHARS,
    clean_html,
    compact_mathml,
    formula_html,
    markdown_to_safe_html,
)

DANGEROUS = re.compile(r"<(script|iframe|object|embed|form|style|svg)\b|\son\w+\s*=|"
                       r"javascript:|data:text", re.I)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_no_payload_survives(payload):
    rendered = markdown_to_safe_html(f"An answer.\n\n{payload}\n")
    assert not DANGEROUS.search(rendered), rendered


def test_maths_is_mathml_and_headings_get_the_lesson_anchors():
    heading = "2. Why divide by $\\sqrt{d_k}$?"
    rendered = markdown_to_safe_html(f"## {heading}\n\n$$A = QK^T$$")
    assert f'<h2 id="{heading_anchor(heading)}">' in rendered
    assert rendered.count("<math") == 2 and "<msqrt>" in rendered and "$" not in rendered


def test_unreadable_latex_shows_its_source_escaped():
    rendered = markdown_to_safe_html("$\\frac{<b>$")
    assert "<b>" not in rendered and "$" not in rendered.replace("&lt;", "")


def test_pictures_only_as_data_images_and_links_never_as_data():
    kept = clean_html('<img src="data:image/png;base64,AAAA" alt="p">'
                      '<a href="data:image/png;base64,AAAA">x</a><a href="https://e.org">y</a>')
    assert 'src="data:image/png;base64,AAAA"' in kept and 'href="https://e.org"' in kept
    assert 'href="data:' not in kept


@pytest.mark.parametrize("src", ["https://tracker.example/p.png?student=alice",
                                 "//tracker.example/p.png", "data:image/svg+xml;base64,PHN2Zz4=",
                                 "data:text/html;base64,PHNjcmlwdD4="])
def test_a_picture_from_anywhere_but_a_data_image_loses_its_source(src):
    # opening the page must fetch nothing (no tracking of the TA) and draw no SVG
    for rendered in (clean_html(f'<img src="{src}" alt="p">'),
                     markdown_to_safe_html(f"![p]({src})")):
        assert "<img" in rendered and "src=" not in rendered, rendered


def test_no_style_can_move_a_students_text_over_the_page():
    # a fixed, full-page box would cover the grader's results with the student's own
    cover = 'position:fixed;top:0;left:0;width:100%;height:100%;background:white'
    for html in (f'<div style="{cover}">11 / 11</div>', f'<p STYLE="{cover}">x</p>',
                 f'<span style="{cover}">x</span>',
                 f'<img src="data:image/png;base64,AA" style="{cover}">'):
        for rendered in (clean_html(html), markdown_to_safe_html(html)):
            assert "style" not in rendered.lower() and "position" not in rendered, rendered


def test_task_list_boxes_stay_and_every_other_input_loses_its_type():
    rendered = markdown_to_safe_html("- [x] scaled\n- [ ] masked\n")
    assert rendered.count('type="checkbox"') == 2, rendered
    for kind in ("password", "text", "submit", "image", "file", "hidden"):
        kept = clean_html(f'<input type="{kind}" checked disabled>')
        assert "type=" not in kept.replace('type="checkbox"', ""), kept


@pytest.mark.parametrize("text", ["[" * 200_000, "$" * 200_000, "<" * 200_000,
                                  "\\begin{a}" * 30_000, "*a" * 100_000, "`" * 200_000])
def test_hostile_markdown_renders_in_bounded_time(text):
    began = time.perf_counter()
    rendered = markdown_to_safe_html(text)
    # a cap, not a speed test: the cut input is rendered, a note says what is left out
    assert f"{len(text) - MAX_MARKDOWN_CHARS} more characters" in rendered
    assert time.perf_counter() - began < 30


def test_a_students_markdown_cannot_pose_as_the_graders_results():
    fake = ('<div class="cell results" id="results-ex3"><h3>Results of Exercise 3: 11 / 11</h3>'
            '<table><tr><td class="pass">passed</td></tr></table></div>\n\n'
            '<p id="summary" class="summary note">all good</p>\n\n## Results ex3\n\n'
            '## Written ex2_explain\n')
    rendered = markdown_to_safe_html(fake)
    assert not re.search(r'\sclass="(?!language-)', rendered), rendered
    assert not re.search(r'\sid="(summary|results-|written-)', rendered), rendered
    assert "Results of Exercise 3" in rendered  # the text stays, only as text


def test_rendered_highlighting_and_the_lesson_anchors_keep_their_classes_and_ids():
    rendered = markdown_to_safe_html("## Exercise 3: causal attention (11 points)\n\n"
                                     "```python\nscores = Q @ K.T\n```\n")
    assert '<h2 id="exercise-3-causal-attention-11-points">' in rendered
    assert re.search(r'class="(highlight|language-python)"', rendered), rendered
    assert clean_html('<code class="tex">x</code>') == '<code class="tex">x</code>'


@pytest.mark.parametrize("latex", ["\\sqrt{d_k}", "\\frac{QK^T}{\\sqrt{d_k}}",
                                   "\\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}",
                                   "m' = \\max(m, \\max_j s_j)"])
@pytest.mark.parametrize("display", ["inline", "block"])
def test_mathml_is_written_short_and_says_the_same(latex, display):
    """No `xmlns` (HTML's parser gives `<math>` its namespace) and no outer `<mrow>`: the
    math element's children are what latex2mathml put in that row, unchanged."""
    from latex2mathml.converter import convert

    full = convert(latex, display=display)
    short = formula_html(latex, display)
    assert "xmlns" not in short and short.startswith(f'<math display="{display}">')
    opening = f'<math xmlns="{MATHML_NAMESPACE}" display="{display}"><mrow>'
    assert full == opening + short.removeprefix(f'<math display="{display}">')[:-len(
        "</math>")] + "</mrow></math>"
    assert markdown_to_safe_html(f"$${latex}$$" if display == "block" else f"${latex}$").count(
        "<math") == 1


def test_mathml_of_another_shape_is_left_as_it_is():
    other = '<math xmlns="x" display="inline"><mi>a</mi></math>'
    assert compact_mathml(other, "inline") == other


@pytest.mark.parametrize("markdown", ["<img src=x onerror=alert(2)>", "![](https://e.org/p.png)",
                                      '<img title="a>b" src="data:image/png;base64,AAAA">'])
def test_every_picture_has_a_text_alternative(markdown):
    # issue 26 (axe-core's image-alt): a picture the student left undescribed, or whose
    # source was dropped, is marked decorative rather than read out as its file name
    rendered = markdown_to_safe_html(markdown)
    assert re.findall(r"<img\b", rendered) and all(
        ' alt="' in tag for tag in re.findall(r"<img\b[^>]*>", rendered)), rendered
    assert markdown_to_safe_html("![a plot](data:image/png;base64,AAAA)").count(
        'alt="a plot"') == 1


@pytest.mark.parametrize("markdown", [
    "$\\text{<b>}$ then [a link](https://e.org)",
    "$\\text{<img src=x onerror=alert(6)>}$\n\nthen [a link](https://e.org)",
    "<math><mtext>raw</mtext></math> then [a link](https://e.org)",
])
def test_no_link_or_text_of_the_cell_ends_up_inside_a_formula(markdown):
    # a math element holding a link is one formula to a screen reader, and a control nested
    # where none may be (axe-core's nested-interactive)
    rendered = markdown_to_safe_html(markdown)
    for formula in re.findall(r"<math\b.*?</math>", rendered, flags=re.S):
        assert "<a " not in formula and "link" not in formula, rendered
    assert '<a href="https://e.org"' in rendered

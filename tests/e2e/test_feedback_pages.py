"""The feedback pages of the corpus's typical students and of a hostile one, in headless
Chromium (file:// pages, no server): what a student sees, and that nothing a student wrote
runs, in the feedback nor in the page formgrader shows a TA.

Screenshots of every page go to the `screenshots` fixture's folder, <test>/ in it.
"""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser

import pytest
from feedback_class import formgrader_page
from feedback_students import HOSTILE, TYPICAL

from autograder.diagnoses.codes import WORDING, lesson_section

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RAW_MATHS = re.compile(r"\$[^$\n]+\$")
NO_HEATMAP = {"loop-in-call"}


@pytest.fixture(scope="module")
def graded(feedback_class, chromium_executable):
    course, result = feedback_class
    assert all(r["status"] == "graded" for r in result.records.values()), result.records
    return course, result


@pytest.fixture
def shots(request, screenshots):
    folder = screenshots / request.node.name.replace("/", "_")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def watch(page) -> list[str]:
    """Every dialog (alert) and console message the page produces."""
    seen: list[str] = []
    page.on("dialog", lambda dialog: (seen.append(f"dialog: {dialog.message}"),
                                      dialog.dismiss()))
    page.on("console", lambda message: seen.append(f"console: {message.text}"))
    return seen


def open_feedback(page, course, student):
    page.goto((course / "feedback" / student / "sdpa" / "attention.html").as_uri())
    page.wait_for_load_state("load")


@pytest.mark.parametrize("student", list(TYPICAL))
def test_a_student_sees_their_outputs_heatmap_maths_and_explanations(page, graded, shots,
                                                                     student):
    course, result = graded
    seen = watch(page)
    open_feedback(page, course, student)
    page.screenshot(path=str(shots / f"{student}.png"), full_page=True)
    record = result.records[student]

    # the summary first, with this student's score
    summary = page.locator("#summary")
    assert f"{record['score']:g} / 20" in summary.inner_text()
    assert page.locator("main").bounding_box()["y"] > summary.bounding_box()["y"]

    # in place of each self-check, what the grader found; the heatmap drawn by the kit as
    # SVG from the weights their attention returned, its numbers in a table
    text = page.locator("body").inner_text()
    assert text.count("this self-check runs in your own Jupyter") == 7
    heatmap = page.locator("figure.heatmap svg[role='img']")
    if student in NO_HEATMAP:  # its attention never returns: no picture, and why
        assert heatmap.count() == 0
        assert "No picture: your code failed" in text
    else:
        assert heatmap.count() == 1 and heatmap.bounding_box()["width"] > 200
        assert page.locator("figure.heatmap table caption").count() == 1
        assert page.locator("figure.heatmap table td").count() == 64
        assert "The weights drawn above" in text

    # mathematics rendered without a network: MathML with a size, no raw $...$ left
    assert page.locator("math").count() > 30
    assert page.locator("math").first.bounding_box()["width"] > 5
    assert not RAW_MATHS.search(text), RAW_MATHS.search(text).group(0)

    # each diagnosis explained, with a working link to the lesson section
    for exercise, got in record["exercises"].items():
        for code in got["diagnoses"]:
            assert " ".join(WORDING[code].explanation.split()[:8]) in " ".join(text.split())
            section = lesson_section(code, exercise)
            link = page.locator(f"#results-{exercise} a[href='#{section.anchor}']")
            assert link.count() >= 1, (code, section.anchor)
            assert page.locator(f"[id='{section.anchor}']").count() == 1

    # the course's code folded, not removed; no script and nothing fetched
    folded = page.locator("details:not([open])")
    assert folded.count() >= 7
    assert not folded.first.locator("pre").is_visible()
    assert page.locator("script").count() == 0
    assert not seen, seen


def test_a_hang_in_a_call_shows_as_timeout_in_the_feedback(page, graded):
    course, result = graded
    assert "timeout" in result.records["loop-in-call"]["exercises"]["ex3"]["diagnoses"]
    open_feedback(page, course, "loop-in-call")
    assert "timeout" in page.locator("#results-ex3").inner_text()
    assert "timeout" in page.locator("#summary").inner_text()


class _Scripts(HTMLParser):
    """Tags, attributes and script text that could run a student's payload. The one SVG a
    page may hold is the kit's own heatmap, drawn from numbers in its `figure.heatmap`."""

    def __init__(self):
        super().__init__()
        self.found, self._in_script, self._in_heatmap = [], False, False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        if tag == "figure":
            self._in_heatmap = ("class", "heatmap") in attrs
        kit_svg = tag == "svg" and self._in_heatmap
        if tag in ("iframe", "object", "embed", "svg", "form") and not kit_svg:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            value = value or ""
            handler = name.startswith("on") and "alert(" in value
            url = name in ("href", "src", "action", "formaction", "data", "srcdoc") and (
                "javascript:" in value.lower() or "alert(" in value)
            if handler or url:
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_data(self, data):
        if self._in_script and "alert(" in data:
            self.found.append(f"<script>{data[:60]}")

    def handle_endtag(self, tag):
        self._in_script = False
        if tag == "figure":
            self._in_heatmap = False


def runnable_payloads(html: str) -> list[str]:
    parser = _Scripts()
    parser.feed(html)
    return parser.found


def test_a_hostile_students_payloads_never_run_in_their_feedback(page, graded, shots):
    course, result = graded
    assert result.records[HOSTILE]["status"] == "graded"
    html = (course / "feedback" / HOSTILE / "sdpa" / "attention.html").read_text()
    assert runnable_payloads(html) == []
    seen = watch(page)
    open_feedback(page, course, HOSTILE)
    page.mouse.move(10, 10)
    page.screenshot(path=str(shots / "feedback.png"), full_page=True)
    for link in page.locator("a").all():  # what a curious student would click
        href = link.get_attribute("href") or ""
        assert not href.lower().startswith(("javascript:", "data:")), href
    assert page.locator("script, iframe, object, embed").count() == 0
    assert "alert(20)" in page.locator("body").inner_text()  # printed, shown as text
    assert not seen, seen


def test_a_hostile_answer_never_runs_in_formgraders_grading_page(page, graded, shots):
    course, _ = graded
    html = formgrader_page(course, HOSTILE)
    assert runnable_payloads(html) == []
    seen = watch(page)
    page.set_content(html, wait_until="domcontentloaded")
    page.mouse.move(300, 300)
    page.screenshot(path=str(shots / "formgrader.png"), full_page=True)
    assert not [s for s in seen if "dialog" in s], seen
    assert page.evaluate("() => [...document.querySelectorAll('*')].filter(e => "
                         "[...e.attributes].some(a => a.value.includes('alert('))).length") == 0


SERIOUS = ("serious", "critical")


def axe_violations(page) -> list[str]:
    """axe-core's serious and critical violations of the open page (every rule it runs by
    default: images' text alternatives, contrast, headings, names of links and controls,
    whatever the page holds), one line each with the first elements it names."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [f"{v['id']} ({v['impact']}): {v['help']}: "
            + "; ".join(node["html"][:120] for node in v["nodes"][:3])
            for v in found if v.get("impact") in SERIOUS]


def heading_jumps(page) -> list[str]:
    """Headings that go down more than one level from the one before (h2 then h4)."""
    levels = page.evaluate("() => [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')]"
                           ".map(h => Number(h.tagName[1]))")
    return [f"h{a} then h{b}" for a, b in zip(levels, levels[1:], strict=False)
            if b > a + 1]


@pytest.mark.parametrize("student", [*TYPICAL, HOSTILE])
def test_a_feedback_page_passes_axe_with_its_maths_read_as_mathml(page, graded, student):
    """Issue 26: no serious or critical axe-core violation; headings in order; every
    formula is MathML in its namespace, which Chromium exposes to a screen reader as maths."""
    course, _ = graded
    open_feedback(page, course, student)
    assert axe_violations(page) == []
    assert heading_jumps(page) == []
    maths = page.evaluate("() => [...document.querySelectorAll('math')].map(m => "
                          "[m.namespaceURI, m.textContent.trim().length > 0])")
    assert len(maths) > 30
    assert all(ns == "http://www.w3.org/1998/Math/MathML" and text for ns, text in maths)
    assert page.get_by_role("math").count() == len(maths)


def test_the_class_report_passes_axe(page, graded):
    course, _ = graded
    page.goto((course / "reports" / "sdpa" / "class_report.html").as_uri())
    page.wait_for_load_state("load")
    assert axe_violations(page) == []
    assert heading_jumps(page) == []

"""Markdown to safe HTML, with the mathematics as MathML: every page that shows a notebook.

The course's config makes this the `markdown2html` filter of every nbconvert HTMLExporter it
builds (`c.HTMLExporter.filters`), so it renders both the students' feedback pages and the
page formgrader shows a TA who marks `ex2_explain`. A student's markdown is hostile: the HTML
it produces is cleaned by nh3 (the Rust sanitiser ammonia) against an allowlist of markdown's
own tags plus MathML, so `<script>`, `on...=` handlers, `javascript:` links, `<style>`,
`<iframe>` and forms never reach a browser. Images may only be `data:` pictures (attachments:
nothing is fetched, no tracking pixel reaches a TA); links may not be `data:`.

Code fences are highlighted only as Python (`code_html.fence_html`): nbconvert would pick
any of Pygments' lexers by the fence's name, and some backtrack for hours on a few bytes.

Mathematics is converted here, on the server, by latex2mathml, because a page must render
without a network and years later: no script, nothing fetched, and Chromium and Firefox draw
MathML natively. A formula latex2mathml cannot read, or reads into markup that is not MathML
(`\text{<b>}` is copied as it is), is shown as its LaTeX source in `<code>`.
The MathML is written short (`compact_mathml`): an HTML page's parser puts `<math>` in the
MathML namespace by itself, and `<math>` is a row of its children already, so latex2mathml's
`xmlns` and outer `<mrow>` (a sixth of the lesson's formulas' bytes) are left out.

Every step is linear in the size of its input, and the input is capped: a cell's markdown
beyond `MAX_MARKDOWN_CHARS` and a formula beyond `MAX_FORMULA_CHARS` are cut, saying so.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from xml.etree import ElementTree

import jinja2
import nh3
from latex2mathml.converter import convert as latex_to_mathml
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from pygments.token import STANDARD_TYPES

from autograder.diagnoses.codes import heading_anchor
from sdpa_course.nbgrader_ext.code_html import fence_html

MAX_MARKDOWN_CHARS = 10_000
MAX_FORMULA_CHARS = 1_000
MATHML_NAMESPACE = "http://www.w3.org/1998/Math/MathML"

MATHML_TAGS = {
    "math", "annotation", "semantics", "menclose", "merror", "mfenced", "mfrac", "mi",
    "mmultiscripts", "mn", "mo", "mover", "mpadded", "mphantom", "mprescripts", "mroot",
    "mrow", "ms", "mspace", "msqrt", "mstyle", "msub", "msubsup", "msup", "mtable", "mtd",
    "mtext", "mtr", "munder", "munderover", "none",
}
MATHML_ATTRIBUTES = {
    "accent", "accentunder", "columnalign", "columnlines", "columnspacing", "depth",
    "display", "displaystyle", "encoding", "fence", "form", "height", "largeop", "linethickness",
    "lspace", "mathsize", "mathvariant", "maxsize", "minsize", "movablelimits", "notation",
    "rowalign", "rowlines", "rowspacing", "rspace", "scriptlevel", "separator", "stretchy",
    "symmetric", "width", "xmlns",
}
TAGS = set(nh3.ALLOWED_TAGS) | MATHML_TAGS | {"input"}
ATTRIBUTES = {
    **{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
    **{tag: MATHML_ATTRIBUTES for tag in MATHML_TAGS},
    "*": {"id", "class", "title", "align"},
    "input": {"type", "checked", "disabled"},  # task lists: [x] done
    "img": {"src", "alt", "width", "height", "title"},
    "a": {"href", "title"},
    "code": {"class"},
}
# Classes a rendering gives (pygments' highlighting, a code block's language, a formula shown
# as LaTeX) are kept; any other class is dropped, so that a student's markdown cannot borrow
# the page's own (`results`, `pass`, `summary`...) to pose as the grader's results.
RENDERED_CLASSES = set(STANDARD_TYPES.values()) - {""} | {"highlight", "hll", "tex"}
LANGUAGE_CLASS = re.compile(r"language-[A-Za-z0-9_+-]{1,40}")
# Ids a heading gets (`heading_anchor`) are kept, except the page's own: its summary, each
# exercise's results and each written answer (`reports/feedback_text.py`), which a link of
# the page's must find first and only once.
HEADING_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
PAGE_IDS = ("summary",)
PAGE_ID_PREFIXES = ("results-", "written-")
URL_SCHEMES = {"http", "https", "mailto", "data"}
DATA_IMAGES = ("data:image/png", "data:image/jpeg", "data:image/gif", "data:image/webp")
# a tag of nh3's output: every attribute value quoted (a `>` may be inside the quotes), and
# no `<img` outside a tag (text is escaped): one pass
IMG_TAG = re.compile(r'<img\b(?:[^<>"]|"[^"]*")*>')
RAW_MATH = re.compile(r"<(/?math)\b", re.I)
# `\text{...}` without braces inside: latex2mathml copies its argument into the MathML as it
# is, so `<`, `>` and `&` are escaped first (shown as written); anything else it copies that is
# not MathML falls back to the formula's source (`_is_mathml`)
TEXT_ARGUMENT = re.compile(r"(\\text\s*\{)([^{}]*)\}")


def _kept_class(value: str) -> str | None:
    names = value.split()
    if names and all(name in RENDERED_CLASSES or LANGUAGE_CLASS.fullmatch(name)
                     for name in names):
        return value
    return None


def _kept_id(value: str) -> str | None:
    if (HEADING_ID.fullmatch(value) and value not in PAGE_IDS
            and not value.startswith(PAGE_ID_PREFIXES)):
        return value
    return None


def _attribute_filter(element: str, attribute: str, value: str) -> str | None:
    """Pictures only from `data:` (attachments): nothing is fetched when a TA or a student
    opens the page; links never to `data:` (`javascript:` never got past nh3's schemes);
    classes and ids only those a rendering gives, never the page's own."""
    if attribute == "class":
        return _kept_class(value)
    if attribute == "id":
        return _kept_id(value)
    if attribute in ("href", "src", "cite", "action", "formaction", "poster", "background"):
        scheme = value.strip().lower()
        if element == "img" and attribute == "src":
            return value if scheme.startswith(DATA_IMAGES) else None
        if scheme.startswith("data:"):
            return None
    if element == "input" and attribute == "type" and value.lower() != "checkbox":
        return None
    return value


def _with_alt(match: re.Match) -> str:
    tag = match.group(0)  # nh3 writes ` name="value"`, a `"` in a value as `&quot;`
    return tag if ' alt="' in tag else tag[:-1] + ' alt="">'


def clean_html(text: str) -> str:
    """HTML from a student (or rendered from one) with only harmless tags and attributes, and
    every picture with a text alternative (`alt=""` where the student gave none: a picture
    whose source was dropped, or one they left undescribed, is passed over by a screen
    reader instead of read out as its file name)."""
    cleaned = nh3.clean(text, tags=TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES,
                        attribute_filter=_attribute_filter,
                        link_rel="noopener noreferrer nofollow", strip_comments=True)
    return IMG_TAG.sub(_with_alt, cleaned) if "<img" in cleaned else cleaned


def raw_html_without_mathml(text: str) -> str:
    """A student's raw HTML with `<math>` shown as text: only the renderer's own formulas are
    MathML. A `<math>` of the student's own could hold the rest of the cell (links, tables:
    a math element must hold no control, and a screen reader reads it as one formula)."""
    return RAW_MATH.sub(r"&lt;\1", text)


def compact_mathml(mathml: str, display: str) -> str:
    """latex2mathml's `<math xmlns=… display=…><mrow>…</mrow></math>` without the `xmlns`
    and the outer `<mrow>` (its only child, so the one closed last), the same formula in
    HTML; anything else unchanged."""
    head = f'<math xmlns="{MATHML_NAMESPACE}" display="{display}"><mrow>'
    tail = "</mrow></math>"
    if mathml.startswith(head) and mathml.endswith(tail):
        return f'<math display="{display}">{mathml[len(head):-len(tail)]}</math>'
    return mathml


def _escaped_text(match: re.Match) -> str:
    return match.group(1) + html.escape(match.group(2), quote=False) + "}"


def _is_mathml(markup: str) -> bool:
    """Well-formed XML of MathML elements only. latex2mathml copies `\text{...}` as it is:
    `\text{<b>}` would open an HTML element inside the formula that takes the rest of the
    cell into it (a math element a screen reader reads as one formula, links and all)."""
    try:
        root = ElementTree.fromstring(markup)
    except ElementTree.ParseError:
        return False
    return all(element.tag.rpartition("}")[2] in MATHML_TAGS for element in root.iter())


def formula_html(latex: str, display: str) -> str:
    """A LaTeX formula as MathML; its source in <code> when it cannot be read."""
    if len(latex) <= MAX_FORMULA_CHARS:
        try:
            mathml = latex_to_mathml(TEXT_ARGUMENT.sub(_escaped_text, latex), display=display)
            if _is_mathml(mathml):
                return compact_mathml(mathml, display)
        except Exception:  # noqa: BLE001 - any LaTeX, however broken, must render
            pass
    shown = latex if len(latex) <= MAX_FORMULA_CHARS else latex[:MAX_FORMULA_CHARS] + " …"
    return f'<code class="tex">{html.escape(shown)}</code>'


def _raw_text(token: dict) -> str:
    """A heading's text as written (formulas in `$`), from mistune's tokens."""
    parts = []
    for child in token.get("children") or []:
        if child.get("type") == "inline_math":
            parts.append(f"${child.get('raw', '')}$")
        elif "raw" in child:
            parts.append(str(child["raw"]))
        else:
            parts.append(_raw_text(child))
    return "".join(parts)


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer, with formulas as MathML and headings ids of our own
    (`heading_anchor`: the ids the diagnoses' lesson links point at)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._anchor = "section"

    def render_token(self, token, state):
        if token.get("type") == "heading":
            self._anchor = heading_anchor(_raw_text(token))
        return super().render_token(token, state)

    def heading(self, text: str, level: int, **attrs) -> str:
        return f'<h{level} id="{self._anchor}">{text}</h{level}>\n'

    def block_math(self, body: str) -> str:
        return formula_html(body, "block")

    def inline_math(self, body: str) -> str:
        return formula_html(body, "inline")

    def latex_environment(self, name: str, body: str) -> str:
        return formula_html(f"\\begin{{{name}}}{body}\\end{{{name}}}", "block")

    def multiline_math(self, text: str) -> str:
        return html.escape(text)

    def inline_html(self, html: str) -> str:
        return super().inline_html(raw_html_without_mathml(html))

    def block_html(self, html: str) -> str:
        return super().block_html(raw_html_without_mathml(html))

    def block_code(self, code: str, info: str | None = None) -> str:
        # the fence's language is the student's to name: one lexer only (see code_html)
        return fence_html(code, info)

    def block_mermaidjs(self, code: str) -> str:
        return fence_html(code, None)  # no script runs on these pages: shown as text


def markdown_to_safe_html(source: str, attachments: dict | None = None) -> str:
    """A markdown cell's HTML: formulas as MathML, sanitised, input capped."""
    source = str(source)
    note = ""
    if len(source) > MAX_MARKDOWN_CHARS:
        note = (f"<p><em>[… {len(source) - MAX_MARKDOWN_CHARS} more characters of this "
                "cell are not shown]</em></p>")
        source = source[:MAX_MARKDOWN_CHARS]
    renderer = MathMLRenderer(escape=False, attachments=attachments or {},
                              exclude_anchor_links=True)
    try:
        rendered = MarkdownWithMath(renderer=renderer).render(source)
    except Exception:  # noqa: BLE001 - markdown that breaks the parser is shown as text
        rendered = f"<pre>{html.escape(source)}</pre>"
    return clean_html(rendered) + note


@lru_cache(maxsize=1024)
def _cached(source: str) -> str:
    """The lesson's cells are the same in every notebook of a class: rendered once."""
    return markdown_to_safe_html(source)


@jinja2.pass_context
def markdown2html(context, source) -> str:
    """The `markdown2html` filter of the course's HTML exporters (see the module doc)."""
    cell = context.get("cell", {}) or {}
    attachments = cell.get("attachments") if isinstance(cell, dict) else None
    if attachments and isinstance(attachments, dict):
        return markdown_to_safe_html(source, attachments)
    return _cached(str(source))

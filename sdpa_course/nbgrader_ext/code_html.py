"""Code to HTML with one syntax highlighter, whatever a notebook asks for: every page of the kit.

nbconvert picks the Pygments lexer of a code cell from the notebook's
`metadata.language_info.pygments_lexer` and the cell's `metadata.magics_language`, and that of
a markdown code fence from its info string (```` ```scala ````). All three are a student's to
write, and several of Pygments' ~600 lexers backtrack exponentially on a few dozen bytes (the
Scala lexer on an unterminated string of 48 backslashes: minutes, then hours; issues #3247,
#3311 of pygments). Even IPython's own lexer, the one Jupyter writes in every notebook, is
quadratic: 9 s on a line of 20,000 dots.

So the kit highlights with Pygments' plain Python lexer only, linear on everything tried, and
ignores the metadata: the course's notebooks are Python. A fence in another language is shown
as plain, escaped text. The course's config makes `highlight_code` the filter of every
nbconvert HTMLExporter it builds (`c.HTMLExporter.filters`), formgrader's page included, and
the class feedback exporter uses it too (`grading.feedback`); `student_html` uses
`fence_html` for markdown.

The feedback page is kept small (issue 13: <= 150 KB): its own stylesheet colours only the
token classes of Pygments' default style, so `feedback_code_html` opens a span only around a
token that has a colour (about three bytes in four of a highlighted cell were spans of names,
punctuation and spaces that nothing styles), and `plain_code_html` shows the course's folded
code as escaped text, quotes left as they are (`&#34;` is five bytes for one).
"""

from __future__ import annotations

import html
from functools import cache

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers.python import PythonLexer
from pygments.styles.default import DefaultStyle
from pygments.token import STANDARD_TYPES, Name, Operator, Whitespace

# Fence languages shown highlighted as Python; any other is shown as text.
PYTHON_NAMES = frozenset({"python", "python3", "py", "py3", "ipython", "ipython3", "sage"})
# nbconvert's class for a code cell's block (`highlight hl-<language>`): stylesheets know it
CELL_CSS_CLASS = " highlight hl-ipython3"

_LEXER = PythonLexer()


class PageStyle(DefaultStyle):
    """Pygments' default style, its purple (operator words, decorators) darkened: #A2F is
    4.48:1 on the page's code background, under WCAG AA's 4.5:1 (axe-core flags it)."""

    styles = {**DefaultStyle.styles, Operator.Word: "bold #9020D0", Name.Decorator: "#9020D0"}


class StyledSpansFormatter(HtmlFormatter):
    """Pygments' HTML with a span only where the style (`PageStyle`) gives the token a look: a
    name, a bracket or a space is plain text (the same on the page), and neighbouring tokens
    of one class share a span (Pygments merges equal openers)."""

    def __init__(self, **options):
        options.setdefault("style", PageStyle)
        super().__init__(**options)

    def _get_css_classes(self, ttype):
        styled = ttype
        while styled not in STANDARD_TYPES:  # a lexer's own token type: styled as its parent
            styled = styled.parent
        if styled not in self.ttype2class or styled in Whitespace:
            return ""
        return super()._get_css_classes(ttype)


@cache
def _formatter(kind: type[HtmlFormatter], css_class: str) -> HtmlFormatter:
    """One formatter of each kind and class, kept: making one builds its whole stylesheet
    (about half a millisecond), and formatting keeps no state in it."""
    return kind(cssclass=css_class)


def python_html(source: str, css_class: str = "highlight") -> str:
    """`source` highlighted as Python, in Pygments' `<div class="highlight"><pre>` block."""
    return highlight(source, _LEXER, _formatter(HtmlFormatter, css_class))


def styled_classes() -> dict[str, str]:
    """CSS class -> declarations of every token class `feedback_code_html` can emit: the
    rules the feedback page's stylesheet must have (a test holds it to them)."""
    formatter = StyledSpansFormatter()
    return {name: style for name, (style, ttype, _) in formatter.class2style.items()
            if ttype not in Whitespace}


def highlight_code(source, language=None, metadata=None) -> str:
    """nbconvert's `highlight_code` filter, with the kit's one lexer: `language` and the
    cell's `metadata` (both a student's to choose) are accepted and ignored."""
    source = str(source)
    return python_html(source if source else " ", CELL_CSS_CLASS)


def feedback_code_html(source, language=None, metadata=None) -> str:
    """The feedback page's `highlight_code`: Python, spans only on the tokens its stylesheet
    colours (`StyledSpansFormatter`); like `highlight_code`, `language` and `metadata` are
    accepted and ignored."""
    source = str(source)
    formatter = _formatter(StyledSpansFormatter, CELL_CSS_CLASS)
    return highlight(source if source else " ", _LEXER, formatter)


def plain_code_html(source) -> str:
    """Code shown as text in a `<pre>`: `&`, `<` and `>` escaped (quotes need not be, in an
    element's text)."""
    return html.escape(str(source), quote=False)


def fence_html(code: str, info: str | None) -> str:
    """A markdown code fence: highlighted when its language is Python, else escaped text."""
    words = (info or "").split(maxsplit=1)
    language = words[0].lower() if words else ""
    if language in PYTHON_NAMES:
        return python_html(code)
    shown = f' class="language-{html.escape(language)}"' if language else ""
    return f"<pre><code{shown}>{html.escape(code)}</code></pre>\n"

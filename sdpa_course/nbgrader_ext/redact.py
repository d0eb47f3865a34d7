"""`RedactFeedback`: what must never reach a student's feedback, and how much of it is shown.

nbgrader's feedback shows each test cell's full source and any traceback quoting it (its
issues #917, #1363). This preprocessor runs last before the HTML exporter and removes:

- the source of every autograded test cell (replaced by a one-line note), and any
  `### BEGIN HIDDEN TESTS` ... `### END HIDDEN TESTS` block left in another cell (an
  unterminated block is removed to the end of its cell);
- absolute file paths (the course directory, the kit, the sandbox's temporary folders) in
  outputs and in the summary, replaced by `<path>`;
- tracebacks of errors (only the error's name and message stay);
- the engine's full report kept in the notebook's metadata.

It also caps what a student's cells put on the page (`MAX_CELL_CHARS` per cell, `MAX_PAGE_CHARS`
for the page), saying what was cut. Runs in the parent process, the gradebook's only writer,
on hostile text: every step is one linear pass (line scans and a regular expression without
nested repetition), so a notebook of megabytes cannot stall the class.
"""

from __future__ import annotations

import re

from sdpa_course.assignment import METADATA_KEY
from sdpa_course.nbgrader_ext.autograde import is_autograded_cell
from sdpa_course.nbgrader_ext.cell_budget import page_scale
from sdpa_course.nbgrader_ext.feedback_step import FeedbackPreprocessor

TEST_CELL_NOTE = "# Graded by the course's hidden tests; the tests themselves are not shown."
MAX_CELL_CHARS = 20_000
MAX_PAGE_CHARS = 300_000
# An absolute POSIX path of two or more parts, or a Windows drive path; not a URL, not `1/d_k`.
# Linear: a match can only start after a character that cannot be inside a path.
ABSOLUTE_PATH = re.compile(
    r"(?<![\w.~/:\\-])(?:/[\w.@+~-]+){2,}/?|(?<![\w])[A-Za-z]:\\[^\s'\"<>|]+"
)


def _marker(line: str) -> str:
    """"begin" / "end" for a `### BEGIN|END HIDDEN TESTS` line, else ""."""
    stripped = line.lstrip(" \t")
    if not stripped.startswith("#"):
        return ""
    words = stripped.lstrip("#").strip().upper()
    if words.startswith("BEGIN HIDDEN TESTS"):
        return "begin"
    if words.startswith("END HIDDEN TESTS"):
        return "end"
    return ""


def strip_hidden_blocks(text: str) -> str:
    """Remove hidden-test blocks, line by line (one pass)."""
    if "HIDDEN TESTS" not in text.upper():
        return text
    kept, hiding = [], False
    for line in text.splitlines(keepends=True):
        marker = _marker(line)
        if hiding:
            hiding = marker != "end"
        elif marker == "begin":
            hiding = True
        else:
            kept.append(line)
    return "".join(kept)


def scrub_paths(text: str) -> str:
    return ABSOLUTE_PATH.sub("<path>", text)


def redact_text(text: str) -> str:
    return scrub_paths(strip_hidden_blocks(text))


def _as_text(value) -> str:
    return "".join(str(v) for v in value) if isinstance(value, list) else str(value)


class TextBudget:
    """Characters of student text left for the page."""

    def __init__(self, total: int):
        self.left = total

    def cap(self, text: str) -> str:
        keep = max(0, min(MAX_CELL_CHARS, self.left))
        self.left -= min(len(text), keep)
        if len(text) <= keep:
            return text
        return text[:keep] + f"\n[... {len(text) - keep} more characters not shown]\n"


def redact_output(output, budget: TextBudget | None = None) -> None:
    budget = budget or TextBudget(MAX_PAGE_CHARS)
    if output.output_type == "stream":
        output.text = budget.cap(redact_text(_as_text(output.text)))
    elif output.output_type == "error":
        output.evalue = budget.cap(redact_text(_as_text(output.get("evalue", ""))))
        output.ename = budget.cap(_as_text(output.get("ename", "Error")))[:200]
        output.traceback = [f"{output.ename}: {output.evalue}"]
    else:
        data = output.get("data", {})
        for mime in list(data):
            if mime.startswith("text/") or mime.endswith("json"):
                data[mime] = budget.cap(redact_text(_as_text(data[mime])))


class RedactFeedback(FeedbackPreprocessor):
    """Strip hidden tests, tracebacks and file paths from the notebook rendered as feedback."""

    def preprocess(self, nb, resources):
        nb.metadata.pop(METADATA_KEY, None)
        self._budget = TextBudget(int(MAX_PAGE_CHARS * page_scale(resources)))
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if is_autograded_cell(cell):
            cell.source = TEST_CELL_NOTE
        else:
            cell.source = self._budget.cap(strip_hidden_blocks(_as_text(cell.source)))
        for output in cell.get("outputs", []):
            redact_output(output, self._budget)
        return cell, resources

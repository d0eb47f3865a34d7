"""`RedactFeedback`: what must never reach a student's feedback.

nbgrader's feedback shows each test cell's full source and any traceback quoting it (its
issues #917, #1363). This preprocessor runs last before the HTML exporter and removes:

- the source of every autograded test cell (replaced by a one-line note), and any
  `### BEGIN HIDDEN TESTS` ... `### END HIDDEN TESTS` block left in another cell;
- absolute file paths (the course directory, the kit, the sandbox's temporary folders) in
  outputs and in the summary, replaced by `<path>`;
- tracebacks of errors (only the error's name and message stay);
- the engine's full report kept in the notebook's metadata.
"""

from __future__ import annotations

import re

from sdpa_course.assignment import METADATA_KEY
from sdpa_course.nbgrader_ext.autograde import is_autograded_cell
from sdpa_course.nbgrader_ext.feedback_summary import FeedbackPreprocessor

TEST_CELL_NOTE = "# Graded by the course's hidden tests; the tests themselves are not shown."
HIDDEN_BLOCK = re.compile(
    r"^[ \t]*#+[ \t]*BEGIN HIDDEN TESTS.*?#+[ \t]*END HIDDEN TESTS[^\n]*\n?",
    re.S | re.M | re.I,
)
# An absolute POSIX path of two or more parts, or a Windows drive path; not a URL, not `1/d_k`.
ABSOLUTE_PATH = re.compile(
    r"(?<![\w.~/:\\-])(?:/[\w.@+~-]+){2,}/?|(?<![\w])[A-Za-z]:\\[^\s'\"<>|]+"
)


def scrub_paths(text: str) -> str:
    return ABSOLUTE_PATH.sub("<path>", text)


def redact_text(text: str) -> str:
    return scrub_paths(HIDDEN_BLOCK.sub("", text))


def _as_text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def redact_output(output) -> None:
    if output.output_type == "stream":
        output.text = redact_text(_as_text(output.text))
    elif output.output_type == "error":
        output.evalue = redact_text(_as_text(output.get("evalue", "")))
        output.traceback = [f"{output.get('ename', 'Error')}: {output.evalue}"]
    else:
        data = output.get("data", {})
        for mime in list(data):
            if mime.startswith("text/") or mime.endswith("json"):
                data[mime] = redact_text(_as_text(data[mime]))


class RedactFeedback(FeedbackPreprocessor):
    """Strip hidden tests, tracebacks and file paths from the notebook rendered as feedback."""

    def preprocess(self, nb, resources):
        nb.metadata.pop(METADATA_KEY, None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if is_autograded_cell(cell):
            cell.source = TEST_CELL_NOTE
        else:
            cell.source = HIDDEN_BLOCK.sub("", _as_text(cell.source))
            if cell.metadata.get(METADATA_KEY, {}).get("summary"):
                cell.source = scrub_paths(cell.source)
        for output in cell.get("outputs", []):
            redact_output(output)
        return cell, resources

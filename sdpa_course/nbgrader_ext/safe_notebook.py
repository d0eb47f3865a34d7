"""`SafeNotebook`: a notebook made safe to render, before any template sees it.

The course's config registers it on every nbconvert HTMLExporter (`c.HTMLExporter.preprocessors`),
so it runs before the student's feedback page and before the page formgrader renders for a TA.
Markdown is cleaned where it is rendered (`student_html`); this step removes the rest of what
a notebook could smuggle into a page:

- outputs: only text streams, `text/plain`, base64 `image/png` / `image/jpeg` and errors are
  kept (HTML, JavaScript, SVG, markdown, LaTeX and widget outputs are dropped, with a note),
  and their metadata is cut to an `alt` string (templates write `width=` unquoted);
- markdown attachments: only base64 PNG, JPEG and GIF pictures;
- raw cells: shown as text, never passed through as HTML;
- cell tags (templates put them in a class attribute): only plain words;
- cells: those beyond the page's budget folded into one notice (`cell_budget`);
- figures: all at the page's full budgets; on a page made again smaller (a feedback page
  over its size, `FeedbackExporter`) only the course's own cells';
- sources: each cell's cut at `MAX_CELL_CHARS`, and all but the written answers' within
  `MAX_PAGE_CHARS` for the page, saying what was cut (as `RedactFeedback` does for the
  feedback): a submission of megabytes of code made formgrader's page take minutes to render
  (175 s and an 87 MB page for 5.5 MB of code), in the TA's Jupyter server.
"""

from __future__ import annotations

import re

from sdpa_course.nbgrader_ext.cell_budget import OTHER_CELLS_SHOWN, fold_extra_cells, page_scale
from sdpa_course.nbgrader_ext.feedback_step import FeedbackPreprocessor
from sdpa_course.nbgrader_ext.outputs import new_output
from sdpa_course.nbgrader_ext.redact import MAX_CELL_CHARS, MAX_PAGE_CHARS, TextBudget

BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
PLAIN_TAG = re.compile(r"[\w.:-]{1,64}")
IMAGE_MIMES = ("image/png", "image/jpeg")
ATTACHMENT_MIMES = ("image/png", "image/jpeg", "image/gif")
FIGURE_LEFT_OUT = "[a figure this cell drew: not shown, the page had no room left for it]"


def _is_base64(value) -> bool:
    return isinstance(value, str) and BASE64.fullmatch(value) is not None


def safe_output(output):
    """The output with only what can be rendered safely, or a note that replaces it."""
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        text = output.get("text", "")
        text = "".join(map(str, text)) if isinstance(text, list) else str(text)
        return new_output("stream", name=name, text=text)
    if kind == "error":
        return new_output("error", ename=str(output.get("ename", "Error")),
                          evalue=str(output.get("evalue", "")), traceback=[])
    if kind not in ("display_data", "execute_result"):
        return None
    data, kept, metadata = output.get("data") or {}, {}, {}
    for mime in IMAGE_MIMES:
        if _is_base64(data.get(mime)):
            kept[mime] = data[mime]
            alt = ((output.get("metadata") or {}).get(mime) or {}).get("alt")
            if isinstance(alt, str):
                metadata[mime] = {"alt": alt}
    plain = data.get("text/plain")
    if isinstance(plain, list):
        plain = "".join(map(str, plain))
    if isinstance(plain, str):
        kept["text/plain"] = plain
    if not kept:
        kept["text/plain"] = "[an output that is not shown here]"
    if kind == "execute_result":
        return new_output("execute_result", data=kept, metadata=metadata,
                          execution_count=output.get("execution_count")
                          if isinstance(output.get("execution_count"), int) else None)
    return new_output("display_data", data=kept, metadata=metadata)


def _is_written_answer(cell) -> bool:
    nbgrader = cell.metadata.get("nbgrader") or {}
    return cell.cell_type == "markdown" and bool(nbgrader.get("grade") and
                                                 nbgrader.get("solution"))


def _without_figure(output):
    data = output.get("data") or {}
    if not any(mime in data for mime in IMAGE_MIMES):
        return output
    return new_output("display_data", data={"text/plain": FIGURE_LEFT_OUT})


class SafeNotebook(FeedbackPreprocessor):
    """Keep only renderable-safe outputs, attachments and raw cells, and sources of a
    bounded size (see the module doc)."""

    def preprocess(self, nb, resources):
        self._scale = scale = page_scale(resources)
        self._budget = TextBudget(int(MAX_PAGE_CHARS * scale))
        self._answer_chars = int(MAX_CELL_CHARS * scale)
        # first, so no later step pays for the folded cells; one more cell than the budget:
        # the notice an autograded notebook holds already (`FoldExtraCells`) is not folded again
        nb.cells = fold_extra_cells(nb.cells, int(OTHER_CELLS_SHOWN * scale) + 1)[0]
        return super().preprocess(nb, resources)

    def _room_for_figures(self, cell) -> bool:
        """Figures are shown at the page's full budgets; on a page made again smaller only
        the course's own cells' (the heatmap), and on the smallest none of the student's."""
        if self._scale >= 1.0:
            return True
        nbgrader = cell.metadata.get("nbgrader")
        return isinstance(nbgrader, dict) and bool(nbgrader.get("locked"))

    def preprocess_cell(self, cell, resources, index):
        source = cell.get("source", "")
        source = "".join(map(str, source)) if isinstance(source, list) else str(source)
        # a written answer is what a TA opens the page to mark: never crowded out by others
        budget = TextBudget(self._answer_chars) if _is_written_answer(cell) else self._budget
        cell.source = budget.cap(source)
        if "outputs" in cell:
            cell.outputs = [o for o in map(safe_output, cell.outputs) if o is not None]
            if not self._room_for_figures(cell):
                cell.outputs = [_without_figure(o) for o in cell.outputs]
        attachments = cell.get("attachments")
        if isinstance(attachments, dict):
            cell.attachments = {
                str(name): {mime: bundle[mime]}
                for name, bundle in attachments.items() if isinstance(bundle, dict)
                for mime in ATTACHMENT_MIMES if _is_base64(bundle.get(mime))
            }
        elif attachments is not None:
            del cell["attachments"]
        tags = cell.metadata.get("tags")
        if tags is not None:
            cell.metadata["tags"] = [t for t in tags if isinstance(t, str)
                                     and PLAIN_TAG.fullmatch(t)] if isinstance(tags, list) else []
        if cell.cell_type == "raw":
            cell.metadata.pop("raw_mimetype", None)
            cell.metadata.pop("format", None)
        return cell, resources

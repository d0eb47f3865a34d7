"""Writing a student's feedback HTML the way `nbgrader generate_feedback` does, but fast,
and bringing it up to date when a grader marks a written answer (`refresh_feedback`).

Same preprocessors (the course's `GenerateFeedback.preprocessors`), same HTML exporter and
template, same `feedback/<student>/<assignment>/<notebook>.html` layout (so `nbgrader
release_feedback` finds it), but one exporter for the whole class: nbgrader builds a new one
per run and its templates recompile each time.
"""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path

import nbformat
import nbgrader
from nbconvert.exporters import TemplateExporter
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbformat.corpus.words import generate_corpus_id
from nbgrader.converters import GenerateFeedback
from traitlets.config import Config

from sdpa_course.course.directory import Course
from sdpa_course.grading.submissions import TIMESTAMP_FILE
from sdpa_course.nbgrader_ext.code_html import feedback_code_html
from sdpa_course.nbgrader_ext.feedback_exporter import FeedbackExporter
from sdpa_course.reports.records import GRADED, save_record

# what nbgrader's release_feedback reads beside the page (the time, the notebook's hashed id)
FEEDBACK_FILES = (TIMESTAMP_FILE, "submission_secret.txt")


class ClassFeedbackExporter(FeedbackExporter):
    """nbconvert's HTMLExporter for a whole class in a row: same template, same page.

    Most cells are the same in every student's notebook (the lesson, the self-checks), so
    code highlighting is cached by source (markdown is cached by `student_html` itself). Code
    is highlighted as Python whatever the notebook's metadata names (`code_html`).
    nbconvert's last pass parses the whole page with BeautifulSoup only to add `alt` to images
    without one and `tabindex` to JupyterLab-template cells; the kit's template gives every
    image its alt text and has no such cells, so that pass is skipped. nbconvert copies the
    notebook three times a page (`from_notebook_node`, `_preprocess`, nbformat's `normalize`);
    the first copy, which keeps the notebook as it was for a smaller page, is enough.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._highlighted: dict = {}

    def _highlight_code(self, source, language=None, metadata=None) -> str:
        """`code_html.feedback_code_html`, cached by source (language and metadata are
        ignored)."""
        source = str(source)
        if source not in self._highlighted:
            if len(self._highlighted) > 4096:  # a class of hostile notebooks: bounded
                self._highlighted.clear()
            self._highlighted[source] = feedback_code_html(source)
        return self._highlighted[source]

    def _preprocess(self, nb, resources):
        """nbconvert's `_preprocess` (normalise, the steps, the check after them) on the copy
        of the notebook `from_notebook_node` has just made, changed in place."""
        resources = copy.deepcopy(resources)
        unique_cell_ids(nb)  # what nbformat's normalize does, on a copy of its own
        for preprocessor in self._preprocessors:
            nb, resources = preprocessor(nb, resources)
            if not self.optimistic_validation:
                self._validate_preprocessor(nb, preprocessor)
        if self.optimistic_validation:
            self._validate_preprocessor(nb, "the last step")
        return nb, resources

    def render_page(self, nb, resources=None, **kw):
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", self._highlight_code)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        return TemplateExporter.from_notebook_node(self, nb, resources, **kw)


def unique_cell_ids(nb) -> None:
    """`nbformat.validator.normalize` in place: from nbformat 4.5 on, a cell without an id or
    with one an earlier cell has gets a new one."""
    if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5):
        return
    seen = set()
    for cell in nb.cells:
        if "id" not in cell or cell["id"] in seen:
            cell["id"] = generate_corpus_id()
        seen.add(cell["id"])


def feedback_exporter(course: Course):
    """An HTMLExporter set up as GenerateFeedback sets up its own, with its preprocessors."""
    config = copy.deepcopy(course.config)
    templates = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    extra = Config()
    if "template_name" not in config.HTMLExporter:
        extra.HTMLExporter.template_name = "feedback"
    if "extra_template_basedirs" not in config.HTMLExporter:
        extra.HTMLExporter.extra_template_basedirs = [str(templates / "templates")]
    extra.HTMLExporter.extra_template_paths = [
        str(templates / "static" / "node_modules" / "bootstrap" / "dist" / "css")
    ]
    config.merge(extra)
    # nbconvert's own option: validate the notebook once after all steps, not after each
    exporter = ClassFeedbackExporter(config=config, optimistic_validation=True)
    steps = config.GenerateFeedback.get(
        "preprocessors", GenerateFeedback.class_traits()["preprocessors"].default()
    )
    for step in steps:
        exporter.register_preprocessor(step, enabled=True)
    return exporter


class FeedbackWriter:
    """Render autograded notebooks to feedback HTML with one reused exporter."""

    def __init__(self, course: Course):
        self.course = course
        self.exporter = feedback_exporter(course)

    def write(self, student: str, nb) -> Path:
        """Render `nb` (an autograded notebook already saved: the feedback steps change it)."""
        course = self.course
        resources = {
            "unique_key": course.notebook,
            "output_files_dir": f"{course.notebook}_files",
            "nbgrader": {
                "student": student,
                "assignment": course.assignment,
                "notebook": course.notebook,
                "db_url": course.db_url,
            },
        }
        html, _ = self.exporter.from_notebook_node(nb, resources=resources)
        source = course.folder("autograded", student)
        dest = course.folder("feedback", student)
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        # generate_feedback copies every other file of the autograded folder; only the two
        # that release_feedback reads are needed, and a student's own .html beside the page
        # would be served with it, without the page's sanitising or its CSP
        for name in FEEDBACK_FILES:
            kept = source / name
            if kept.is_file() and not kept.is_symlink():
                shutil.copyfile(kept, dest / name)
        out = dest / f"{course.notebook}.html"
        out.write_text(html, encoding="utf-8")
        os.chmod(out, 0o644)
        return out


def refresh_feedback(course: Course, class_records: dict[str, dict], marks: dict[str, dict],
                     *, force: bool = False, writer: FeedbackWriter | None = None) -> list[str]:
    """Regenerate the pages of graded students whose hand marks changed since their page was
    written (or whose page is missing; every graded student's with `force`); their records
    note the marks now shown. Needs nbgrader's gradebook open (`shared_gradebook`). `writer`:
    the run's own, if it made one already (one exporter per run)."""
    stale = []
    for student, record in class_records.items():
        if record.get("status") != GRADED or student not in marks:
            continue
        page = course.folder("feedback", student) / f"{course.notebook}.html"
        if force or not page.is_file() or record.get("feedback_marks") != \
                marks[student]["fingerprint"]:
            stale.append(student)
    if not stale:
        return []
    writer = writer or FeedbackWriter(course)
    refreshed = []
    for student in stale:
        autograded = course.folder("autograded", student) / f"{course.notebook}.ipynb"
        if not autograded.is_file():
            continue  # graded elsewhere and not here: nothing to render from
        writer.write(student, nbformat.read(str(autograded), as_version=4))
        record = class_records[student]
        record["feedback_marks"] = marks[student]["fingerprint"]
        save_record(course.reports_dir, record)
        refreshed.append(student)
    return refreshed

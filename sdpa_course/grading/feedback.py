"""Writing a student's feedback HTML the way `nbgrader generate_feedback` does, but fast.

Same preprocessors (the course's `GenerateFeedback.preprocessors`), same HTML exporter and
template, same `feedback/<student>/<assignment>/<notebook>.html` layout (so `nbgrader
release_feedback` finds it), but one exporter for the whole class: nbgrader builds a new one
per run and its templates recompile each time.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
from pathlib import Path

import jinja2
import nbgrader
from nbconvert.exporters import TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbgrader.converters import GenerateFeedback
from nbgrader.utils import find_all_files
from traitlets.config import Config

from sdpa_course.course.directory import Course
from sdpa_course.nbgrader_ext.feedback_exporter import FeedbackExporter

_IMG_WITHOUT_ALT = re.compile(r"<img(?![^>]*\balt=)")


class ClassFeedbackExporter(FeedbackExporter):
    """nbconvert's HTMLExporter for a whole class in a row: same template, same page.

    Most cells are the same in every student's notebook (the lesson, the self-checks), so
    code highlighting and markdown rendering are cached by source. nbconvert's last pass
    parses the whole page with BeautifulSoup only to add `alt` to images without one and
    `tabindex` to JupyterLab-template cells; the classic template the feedback uses has no
    such cells, and the `alt` is added here by a regular expression.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._highlighted: dict = {}
        self._markdown: dict = {}

    @jinja2.pass_context
    def markdown2html(self, context, source):
        cell = context.get("cell", {})
        if cell.get("attachments"):
            return super().markdown2html(context, source)
        path = context.get("resources", {}).get("metadata", {}).get("path", "")
        key = (source, path)
        if key not in self._markdown:
            self._markdown[key] = super().markdown2html(context, source)
        return self._markdown[key]

    def _cached_highlight(self, highlight):
        def highlight_code(source, language=None, metadata=None):
            key = (source, language, (metadata or {}).get("magics_language"))
            if key not in self._highlighted:
                self._highlighted[key] = highlight(source, language, metadata)
            return self._highlighted[key]

        return highlight_code

    def from_notebook_node(self, nb, resources=None, **kw):
        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        highlight = self._cached_highlight(Highlight2HTML(pygments_lexer=lexer, parent=self))
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", highlight)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        html = _IMG_WITHOUT_ALT.sub(
            '<img alt="No description has been provided for this image"', html)
        return html, resources


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
        # like generate_feedback: the other files of the autograded folder (timestamp.txt)
        ignore = [*course.coursedir.ignore, "*.ipynb"]
        for name in find_all_files(str(source), ignore) if source.is_dir() else []:
            target = dest / Path(name).relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(name, target)
        out = dest / f"{course.notebook}.html"
        out.write_text(html, encoding="utf-8")
        os.chmod(out, 0o644)
        return out

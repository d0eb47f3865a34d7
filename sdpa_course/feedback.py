"""Writing a student's feedback HTML the way `nbgrader generate_feedback` does, but fast.

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

from traitlets.config import Config

from sdpa_course.coursedir import Course


def feedback_exporter(course: Course):
    """An HTMLExporter set up as GenerateFeedback sets up its own, with its preprocessors."""
    import nbgrader
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback

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
    exporter = HTMLExporter(config=config)
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
        html, _ = self.exporter.from_notebook_node(copy.deepcopy(nb), resources=resources)
        source = course.folder("autograded", student)
        dest = course.folder("feedback", student)
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        # like generate_feedback: the other files of the autograded folder (timestamp.txt)
        for path in source.iterdir() if source.is_dir() else []:
            if path.is_file() and path.suffix != ".ipynb":
                shutil.copy(path, dest / path.name)
        out = dest / f"{course.notebook}.html"
        out.write_text(html, encoding="utf-8")
        os.chmod(out, 0o644)
        return out

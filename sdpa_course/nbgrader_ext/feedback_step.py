"""`FeedbackPreprocessor`: the base of the kit's feedback steps."""

from __future__ import annotations

from nbgrader.preprocessors import GetGrades, NbGraderPreprocessor
from traitlets import List


class FeedbackPreprocessor(NbGraderPreprocessor):
    """A feedback step: takes the HTML exporter's shared `display_data_priority` setting.

    nbconvert's HTMLExporter sets it for every step; without the trait nbgrader warns
    "Config option not recognized" (nbgrader's own GetGrades declares it the same way).
    """

    display_data_priority = List(GetGrades.class_traits()["display_data_priority"].default(),
                                 config=True)

"""The HTML exporter of the kit's feedback pages: its own class, so that the kit's template
settings (`c.FeedbackExporter.*`) reach feedback only, not formgrader's HTMLExporter.

A page is at most `MAX_PAGE_BYTES`: one that comes out larger (a student's own cells and text
at their budgets, in the most markup they can make) is made again with a smaller share of the
budgets (`cell_budget.page_scale`), down to none of the student's own text, saying each time
what was left out. An ordinary page is made once.
"""

from __future__ import annotations

import copy

from nbconvert.exporters import HTMLExporter

from sdpa_course.assignment import METADATA_KEY
from sdpa_course.nbgrader_ext.cell_budget import PAGE_SCALE_KEY

MAX_PAGE_BYTES = 150_000  # the README's target for a feedback page
PAGE_SCALES = (1.0, 0.25, 0.05, 0.0)


class FeedbackExporter(HTMLExporter):
    def from_notebook_node(self, nb, resources=None, **kw):
        for scale in PAGE_SCALES:
            tried = copy.deepcopy(resources) if resources is not None else {}
            tried.setdefault(METADATA_KEY, {})[PAGE_SCALE_KEY] = scale
            page, out = self.render_page(nb, tried, **kw)
            if len(page.encode("utf-8")) <= MAX_PAGE_BYTES:
                break
        return page, out

    def render_page(self, nb, resources, **kw):
        """One rendering of the page, with the budgets `resources` name."""
        return super().from_notebook_node(nb, resources, **kw)

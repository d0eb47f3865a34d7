"""The HTML exporter of the kit's feedback pages: its own class, so that the kit's template
settings (`c.FeedbackExporter.*`) reach feedback only, not formgrader's HTMLExporter."""

from nbconvert.exporters import HTMLExporter


class FeedbackExporter(HTMLExporter):
    pass

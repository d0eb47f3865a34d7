"""`sdpa-course check`: grade one submission and print its report.

Exit status 0 whenever the submission was graded, whatever its score; 2 when it could not be
(a missing file, broken notebook JSON, another assignment's notebook, an empty file).
The grading engine is imported only once the arguments are known to be usable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def check_path(path: Path, *, as_json: bool = False) -> int:
    from autograder.submission import SubmissionError, read_submission

    try:
        cells = read_submission(path)
    except SubmissionError as err:
        print(f"sdpa-course check: {err}", file=sys.stderr)
        return 2
    from autograder.engine import grade_cells
    from autograder.report import render_text

    report = grade_cells(cells, submission=str(path))
    print(json.dumps(report, indent=2) if as_json else render_text(report))
    return 0

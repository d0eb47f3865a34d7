"""`sdpa-course check`: grade one submission and print its report.

Exit status 0 whenever the submission was graded, whatever its score; 2 when it could not be
(a missing file, broken notebook JSON, another assignment's notebook, an empty file); 1 when
the kit itself failed (the sandbox could not start).
The grading engine is imported only once the arguments are known to be usable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def check_path(path: Path, *, as_json: bool = False, variant=None) -> int:
    """Grade `path` as `variant` (`autograder.variants`; the lesson's numbers by default)."""
    from autograder.submission import SubmissionError, read_submission

    try:
        cells = read_submission(path)
    except SubmissionError as err:
        print(f"sdpa-course check: {err}", file=sys.stderr)
        return 2
    from autograder.sandbox import default_pool

    default_pool().start(wait=False)  # the zygote boots while the suites import
    from autograder.engine import grade_cells
    from autograder.report import render_text

    try:
        report = (grade_cells(cells, submission=str(path)) if variant is None
                  else grade_cells(cells, submission=str(path), variant=variant))
    except Exception as err:  # the kit, not the submission, failed: say so, exit non-zero
        print(f"sdpa-course check: the kit could not grade {path}: {type(err).__name__}: "
              f"{str(err).strip()}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if as_json else render_text(report))
    return 0

"""`sdpa-course check`: grade one submission and print its report.

Exit status 0 whenever the submission was graded, whatever its score; 2 when it could not be
(a missing file, broken notebook JSON, another assignment's notebook, an empty file); 1 when
the kit itself failed (the sandbox could not start).
The grading engine is imported only once the arguments are known to be usable.

`check` is what a self-learner runs on their own notebook: where the machine refuses the
sandbox's namespaces, it says so in one line and runs the code unisolated (the report's
warnings say so too), rather than refusing as `grade` does.

Its sandbox's zygote is kept warm for ten minutes after use (`autograder.sandbox.warm`;
``SDPA_COURSE_WARM_SANDBOX`` seconds, 0 for never), so that a check after an edit does not
pay for its start again: about half of a check's time.
"""

from __future__ import annotations

import gc
import json
import sys
import threading
import warnings
from pathlib import Path

from autograder.sandbox import IsolationUnavailable, Limits, SandboxPool  # no numpy: quick
from autograder.sandbox.warm import idle_seconds
from autograder.submission import SubmissionError, read_submission
from autograder.terminal import one_line

UNISOLATED_NOTE = ("sdpa-course check: this machine refuses the sandbox's isolation ({reason}); "
                   "running your code unisolated, as you, which is fine for your own notebook "
                   "(never grade others' this way)")


def _load_engine(load, collector_was_on: bool) -> None:
    try:
        load()
    except Exception:  # noqa: BLE001 - the engine imports them again, and says what failed
        pass
    finally:
        # What they made joins the oldest generation unwalked (freeze, then unfreeze), as
        # objects that outlive collections do: the young ones' walks skip it again. Not
        # where a caller froze objects of its own: they stay frozen.
        if not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        if collector_was_on:
            gc.enable()


def check_path(path: Path, *, as_json: bool = False, variant=None) -> int:
    """Grade `path` as `variant` (`autograder.variants`; the lesson's numbers by default)."""
    try:
        cells = read_submission(path)
    except SubmissionError as err:
        # the message quotes the notebook (its grade ids) and its path: shown, never acted on
        print(f"sdpa-course check: {one_line(err)}", file=sys.stderr)
        return 2
    # The next check (after an edit) forks its worker from this zygote: see `sandbox.warm`.
    pool = SandboxPool(keep_warm=idle_seconds())
    pool.start(wait=False)  # the zygote boots while the engine and the suites import
    if pool.warm:  # its worker isolates itself while they import
        pool.prefork(Limits())  # the engine's limits (`grade_cells`, limits=None)
    # The imports below make objects that live as long as the process: the cyclic garbage
    # collector ran some sixty times among them (5 ms) and freed next to nothing; it is
    # back on once they are done.
    collector_was_on = gc.isenabled()
    gc.disable()
    # deferred: numpy, the engine and the suites import while the zygote boots
    from autograder.engine import grade_cells, load

    if pool.warm:  # no zygote to wait for: the suites and diagnoses load while the cells run
        threading.Thread(target=_load_engine, args=(load, collector_was_on),
                         daemon=True).start()
    else:  # the hidden suites, the diagnoses and the report load meanwhile too
        _load_engine(load, collector_was_on)

    try:
        graded_as = {} if variant is None else {"variant": variant}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the report carries them
            try:
                report = grade_cells(cells, submission=str(path), pool=pool, **graded_as)
            except IsolationUnavailable as refused:
                pool.close()
                print(UNISOLATED_NOTE.format(reason=refused.reason), file=sys.stderr)
                pool = SandboxPool(isolation="unsafe-none")
                report = grade_cells(cells, submission=str(path), pool=pool, **graded_as)
    except Exception as err:  # the kit, not the submission, failed: say so, exit non-zero
        print(f"sdpa-course check: the kit could not grade {one_line(path)}: "
              f"{type(err).__name__}: {one_line(str(err).strip())}", file=sys.stderr)
        return 1
    finally:
        pool.close()
    from autograder.report import render_text  # deferred: the engine imported it by now

    shown = report["variant"].get("shown")
    if variant is None and shown not in (None, report["variant"]["label"]):
        # the notebook showed a student's numbers (its own, most likely): say how to check them
        report["warnings"].append(f"no student was named, so it was checked on the lesson's "
                                  f"numbers: to check it on the numbers of variant {shown}, "
                                  f"run `sdpa-course check {path} --student YOUR_ID`")
    print(json.dumps(report, indent=2) if as_json else render_text(report))
    return 0

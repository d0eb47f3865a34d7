"""The IRI grammar jsonschema loads is deferred until an IRI is checked, with the same
answers; and the command line's exit still runs the atexit handlers and flushes its output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rfc3987_syntax")

IRIS = ["http://example.com/ä?q=1#f", "not an iri at all", "mailto:ada@example.org", "::"]
CHECK = f"""
import json, sys
{{defer}}
import nbformat  # imports jsonschema, which looks for rfc3987_syntax
loaded_before = "lark" in sys.modules
from jsonschema import FormatChecker
checker = FormatChecker()
answers = {{{{kind: [checker.conforms(v, kind) for v in {IRIS!r}]
            for kind in ("iri", "iri-reference")}}}}
print(json.dumps({{{{"loaded_before": loaded_before, "answers": answers,
                  "loaded_after": "lark" in sys.modules}}}}))
"""


def _run(defer: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHECK.format(defer=defer)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_the_iri_grammar_loads_only_when_an_iri_is_checked_with_the_same_answers():
    deferred = _run("from sdpa_course.deferred_imports import defer_iri_grammar\n"
                    "defer_iri_grammar()")
    eager = _run("")
    assert eager["loaded_before"] and not deferred["loaded_before"]
    assert deferred["loaded_after"]
    assert deferred["answers"] == eager["answers"]
    assert deferred["answers"]["iri"][0] is True and deferred["answers"]["iri"][1] is False


def test_the_console_script_runs_atexit_handlers_and_flushes_before_its_quick_exit(tmp_path):
    script = ("import atexit, sys\nfrom sdpa_course import cli\n"
              "atexit.register(lambda: print('atexit ran', flush=True))\n"
              "sys.stdout.write('unflushed output')\n"
              f"sys.argv = ['sdpa-course', 'check', {str(tmp_path / 'missing.ipynb')!r}]\n"
              "cli.run()\nprint('not reached')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 2  # check's status for a file it cannot read
    assert done.stdout == "unflushed outputatexit ran\n"
    assert "no such file" in done.stderr


def test_imports_with_the_collector_paused_leave_it_as_it_was():
    import gc

    from sdpa_course.deferred_imports import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_engine_imports_what_grades_once_the_cells_run_or_when_check_loads_it():
    """`check` imports the suites, the diagnoses and the report in a thread while a warm
    sandbox runs the cells (`engine.load`): importing the engine leaves them out."""
    script = ("import json, sys\nimport autograder.engine as engine\nnames = "
              "['autograder.diagnoses', 'autograder.runner', 'autograder.report', "
              "'autograder.heatmap', 'autograder.suites.test_ex3']\n"
              "before = [n for n in names if n in sys.modules]\nengine.load()\n"
              "print(json.dumps([before, [n for n in names if n in sys.modules]]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    before, after = json.loads(done.stdout)
    assert before == [] and len(after) == 5


def test_check_imports_with_the_collector_paused_and_leaves_it_as_it_was(tmp_path):
    """`check_path` imports the engine with the collector off, then puts what the imports
    made in the oldest generation (nothing stays frozen): a few young collections in the
    whole check instead of one every 700 objects imported, and the collector on or off
    afterwards as it was before."""
    answer_key = Path(__file__).resolve().parent.parent / "solutions/sdpa/attention.ipynb"
    script = ("import gc, io, json, sys, contextlib\nfrom pathlib import Path\n"
              "from autograder.check import check_path\n"
              "if sys.argv[2] == 'off':\n    gc.disable()\n"
              "before = sum(generation['collections'] for generation in gc.get_stats())\n"
              "with contextlib.redirect_stdout(io.StringIO()) as shown:\n"
              "    status = check_path(Path(sys.argv[1]), as_json=True)\n"
              "collections = sum(g['collections'] for g in gc.get_stats()) - before\n"
              "print(json.dumps([status, json.loads(shown.getvalue())['score'], gc.isenabled(),"
              " gc.get_freeze_count(), collections]))")
    env = {**os.environ, "SDPA_COURSE_WARM_SANDBOX": "0"}
    for collector in ("on", "off"):
        done = subprocess.run([sys.executable, "-c", script, str(answer_key), collector],
                              capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        status, score, enabled, frozen, collections = json.loads(done.stdout)
        assert (status, score, frozen) == (0, 20.0, 0)
        assert enabled is (collector == "on")
        assert collections <= 10, collections

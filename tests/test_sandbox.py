"""The sandbox keeps hostile student code away from grading: one claim per test."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import autograder
from autograder.corpus import pieces
from autograder.engine import grade_content
from autograder.sandbox import (
    Cell,
    ForbiddenImport,
    Limits,
    MissingName,
    Sandbox,
    SandboxPool,
    StudentDied,
    StudentMemoryLimit,
    StudentRaised,
    StudentTimeout,
    Unserializable,
)
from autograder.sandbox.isolation import processes_of

REPO = Path(autograder.__file__).resolve().parent.parent
FAST = Limits(cell_seconds=1.5, call_seconds=1.0, interrupt_grace_seconds=0.3, cpu_seconds=10,
              memory_mb=256, max_restarts=4)
# A cell that imports pyplot pays for it itself (the zygote no longer preloads matplotlib):
# about 0.6 s of CPU on a quiet machine, too close to FAST's 1.5 s on a loaded one.
PYPLOT = Limits(cell_seconds=6.0, call_seconds=1.0, interrupt_grace_seconds=0.3, cpu_seconds=10,
                memory_mb=256, max_restarts=4)
linux_root = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0,
    reason="namespace isolation needs Linux and root")


@pytest.fixture(scope="module")
def pool():
    with SandboxPool() as shared:
        yield shared


@pytest.fixture
def run(pool):
    """Factory: a started Sandbox built from source strings, closed after the test."""
    opened = []

    def make(*sources: str, limits: Limits = FAST, sandbox_pool=None) -> Sandbox:
        cells = [Cell(textwrap.dedent(s), f"cell {i + 1}") for i, s in enumerate(sources)]
        sandbox = Sandbox(cells, limits=limits, pool=sandbox_pool or pool)
        opened.append(sandbox)
        sandbox.start()
        return sandbox

    yield make
    for sandbox in opened:
        sandbox.close()


def statuses(sandbox: Sandbox) -> list[str]:
    return [outcome.status for outcome in sandbox.outcomes]


# -- the execution model -------------------------------------------------------------------


def test_cells_share_one_namespace_and_values_come_back_as_plain_data(run):
    sandbox = run("import numpy as np\nx = np.arange(6.0).reshape(2, 3)",
                  "y = (x.sum(), [1, 'a', None], {'k': 2j}, np.float32(0.5), True)")
    x, y = sandbox.get("x"), sandbox.get("y")
    assert type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (2, 3)
    np.testing.assert_array_equal(x, np.arange(6.0).reshape(2, 3))
    assert y == (15.0, [1, "a", None], {"k": 2j}, np.float32(0.5), True)
    assert type(y[3]) is np.float32


def test_error_in_one_cell_is_reported_and_the_next_cell_still_runs(run):
    sandbox = run("a = 1", "b = 2\n\nc = 1 / 0", "d = a + b")
    assert statuses(sandbox) == ["ok", "error", "ok"]
    assert sandbox.outcomes[1].error == "ZeroDivisionError: division by zero (line 3)"
    assert sandbox.get("d") == 3


def test_syntax_error_reports_its_line_in_the_submission(pool):
    cells = [Cell("x = 1", "line 1", 1), Cell("def f(:\n    pass", "line 7", 7)]
    with Sandbox(cells, limits=FAST, pool=pool) as sandbox:
        outcomes = sandbox.start()
    assert outcomes[1].status == "syntax-error"
    assert outcomes[1].error.startswith("SyntaxError:") and outcomes[1].error.endswith("(line 7)")


def test_student_exception_in_a_call_carries_type_message_and_place(run):
    sandbox = run("def f(x):\n    return {}[x]")
    with pytest.raises(StudentRaised) as raised:
        sandbox.call("f", "key")
    assert raised.value.type_name == "KeyError" and raised.value.message == "'key'"
    assert raised.value.where == "cell 1, line 2"
    assert raised.value.diagnosis == "crashed"


def test_missing_name_raises_missing_name(run):
    sandbox = run("x = 1")
    assert sandbox.has("x") and not sandbox.has("attention")
    with pytest.raises(MissingName) as missing:
        sandbox.call("attention", 1)
    assert missing.value.name == "attention" and missing.value.diagnosis == "missing-name"


# -- patching and state ----------------------------------------------------------------------


def test_patched_numpy_reaches_neither_the_grader_nor_the_next_student(run):
    cheat = run("import numpy\nnumpy.allclose = lambda *a, **k: True\n"
                "def check():\n    return numpy.allclose(1, 2)")
    assert cheat.call("check") is True
    assert np.allclose(1, 2) is False or not np.allclose(1, 2)
    honest = run("import numpy\ndef check():\n    return bool(numpy.allclose(1, 2))")
    assert honest.call("check") is False


def test_os_exit_in_a_cell_is_recorded_and_later_cells_run_with_earlier_state(run):
    sandbox = run("x = 41", "import os\nos._exit(3)", "y = x + 1")
    assert statuses(sandbox) == ["ok", "died", "ok"]
    assert "exited with code 3" in sandbox.outcomes[1].error
    assert sandbox.get("y") == 42


def test_os_exit_inside_a_call_raises_died_and_the_next_call_works(run):
    sandbox = run("import os\nscale = 2\ndef f(x):\n    if x < 0:\n        os._exit(1)\n"
                  "    return scale * x")
    assert sandbox.call("f", 1) == 2
    with pytest.raises(StudentDied, match="exited with code 1"):
        sandbox.call("f", -1)
    assert sandbox.call("f", 5) == 10  # a fresh process with the cells replayed
    assert sandbox.restarts == 1


def cpu_seconds_of(pid: int) -> float:
    """CPU time a host process has used (utime + stime, /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_infinite_loop_at_top_level_times_out_and_later_cells_run(run):
    sandbox = run("a = 1", "while True:\n    pass", "b = a + 1")
    assert statuses(sandbox) == ["ok", "timeout", "ok"]
    assert sandbox.outcomes[1].error == f"timed out after {FAST.cell_seconds:g} s"
    assert sandbox.get("b") == 2
    assert sandbox.restarts == 0


def test_infinite_loop_inside_a_call_is_charged_its_limit_and_later_calls_work(run):
    """Charged by the time it ran, whatever the machine's load: about call_seconds of CPU."""
    sandbox = run("def spin(n):\n    while n:\n        pass\n    return 7")
    before = cpu_seconds_of(sandbox.pid)
    with pytest.raises(StudentTimeout):
        sandbox.call("spin", 1)
    spent = cpu_seconds_of(sandbox.pid) - before
    most = FAST.call_seconds + FAST.interrupt_grace_seconds + 0.5
    assert FAST.call_seconds * 0.8 <= spent <= most
    assert sandbox.call("spin", 0) == 7
    assert sandbox.restarts == 0  # KeyboardInterrupt was enough: same process


def test_swallowed_keyboard_interrupt_is_killed_and_the_sandbox_recovers(run):
    sandbox = run("def stubborn():\n    while True:\n        try:\n            while True:\n"
                  "                pass\n        except KeyboardInterrupt:\n            pass\n"
                  "def fine():\n    return 'ok'",
                  "try:\n    while True:\n        pass\nexcept KeyboardInterrupt:\n"
                  "    while True:\n        pass",
                  "after = 1")
    assert statuses(sandbox) == ["ok", "timeout", "ok"]
    with pytest.raises(StudentTimeout):
        sandbox.call("stubborn")
    assert sandbox.call("fine") == "ok"


def test_cpu_limit_stops_a_loop_the_wall_clock_would_allow(run):
    limits = Limits(cell_seconds=10, call_seconds=10, cpu_seconds=1, max_restarts=2)
    sandbox = run("def spin():\n    while True:\n        pass", limits=limits)
    with pytest.raises(StudentTimeout, match="CPU"):
        sandbox.call("spin")


def test_memory_hog_raises_memory_limit_in_a_call_and_in_a_cell(run):
    sandbox = run("hog = bytearray(2**31)", "def grab():\n    return len(bytearray(2**31))\n"
                  "def small():\n    return 1")
    assert sandbox.outcomes[0].status == "memory-limit"
    with pytest.raises(StudentMemoryLimit) as hit:
        sandbox.call("grab")
    assert hit.value.diagnosis == "memory-limit"
    assert sandbox.call("small") == 1


def test_too_many_restarts_stop_respawning(run):
    sandbox = run("import os\ndef die():\n    os._exit(9)",
                  limits=Limits(call_seconds=2, max_restarts=2))
    for _ in range(3):
        with pytest.raises(StudentDied):
            sandbox.call("die")
    with pytest.raises(StudentDied, match="restarted 2 times"):
        sandbox.call("die")


# -- output and warnings -----------------------------------------------------------------------


def test_ten_megabytes_of_print_are_truncated_and_grading_is_unaffected(run):
    sandbox = run("print('x' * 10_000_000)\nvalue = 3", "import sys\nsys.stderr.write('e' * 5000)")
    assert statuses(sandbox) == ["ok", "ok"]
    assert sandbox.get("value") == 3
    assert len(sandbox.output) < FAST.output_bytes + 100
    assert "bytes dropped]" in sandbox.output
    assert sandbox.outcomes[0].output.startswith("xxx")


def test_warnings_never_turn_into_failures(run):
    sandbox = run("import warnings, numpy as np\nwarnings.warn('careful')\n"
                  "z = float(np.float64(1e308) * 10)\n"
                  "def f():\n    warnings.warn('again', RuntimeWarning)\n"
                  "    return float(np.log(np.float64(0)))")
    assert statuses(sandbox) == ["ok"]
    assert sandbox.get("z") == float("inf")
    assert sandbox.call("f") == float("-inf")
    assert "careful" in sandbox.output


def test_a_warning_is_told_under_the_cell_or_call_that_was_running_when_it_was_raised(run):
    """A wrong mask makes the student's softmax warn while their attention runs: the warning
    belongs to the cell or the grader's call that ran, not to the softmax cell (issue 26)."""
    sandbox = run("import warnings\nimport numpy as np\nwarnings.simplefilter('always')\n"
                  "def softmax(z):\n    shifted = z - z.max()\n    return np.exp(shifted)",
                  "def attention(scores):\n    return softmax(scores)",
                  "attention(np.array([-np.inf, -np.inf]))\nwarnings.warn('careful')")
    assert statuses(sandbox) == ["ok", "ok", "ok"]
    assert [outcome.output for outcome in sandbox.outcomes[:2]] == ["", ""]
    assert sandbox.outcomes[2].output.splitlines() == [
        "RuntimeWarning while cell 3 ran: invalid value encountered in subtract (raised in "
        "softmax at line 5 of cell 1)",
        "UserWarning while cell 3 ran: careful (raised at line 2)"]
    sandbox.call("attention", np.array([-np.inf, -np.inf]))
    assert sandbox.last_output == (
        "RuntimeWarning while the grader called attention: invalid value encountered in "
        "subtract (raised in softmax at line 5 of cell 1)\n")


def test_magics_are_ignored_timing_magics_run_their_code_and_shell_is_refused(run):
    sandbox = run("get_ipython().run_line_magic('matplotlib', 'inline')\n"
                  "get_ipython().system('touch /tmp/shell-ran')\n"
                  "get_ipython().run_line_magic('time', 'x = 5')",
                  "get_ipython().run_cell_magic('time', '', 'y = x + 1\\n')",
                  "import matplotlib.pyplot as plt, numpy as np\n"
                  "plt.imshow(np.eye(3)); plt.colorbar(); plt.show()\nimport os\n"
                  "ran = os.path.exists('/tmp/shell-ran')", limits=PYPLOT)
    assert statuses(sandbox) == ["ok", "ok", "ok"]
    assert sandbox.get("y") == 6 and sandbox.get("ran") is False
    assert "shell command not run" in sandbox.output


def test_matplotlib_is_imported_only_by_a_cell_that_imports_it(run):
    """The zygote does not preload it (issue 30); a cell that needs it still draws."""
    sandbox = run("import sys\nbefore = sorted(m for m in sys.modules if 'matplotlib' in m)",
                  "import matplotlib.pyplot as plt, numpy as np\n"
                  "plt.imshow(np.eye(3)); plt.title('mine'); plt.show()\n"
                  "backend = plt.get_backend().lower()", limits=PYPLOT)
    assert statuses(sandbox) == ["ok", "ok"]
    assert sandbox.get("before") == [] and sandbox.get("backend") == "agg"
    assert len(sandbox.outcomes[1].images) == 1


# -- what can cross ------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "named"), [
    ("class A(np.ndarray):\n    pass\nvalue = np.zeros(3).view(A)", "A"),
    ("value = np.ma.masked_array([1.0, 2.0], mask=[True, False])", "numpy.ma.MaskedArray"),
    ("class Liar(float):\n    def __eq__(self, other):\n        return True\nvalue = Liar(1.0)",
     "Liar"),
    ("class Any:\n    def __eq__(self, other):\n        return True\nvalue = [1, Any()]", "Any"),
    ("value = np.array(['a', 'b'])", "dtype <U1"),
    ("value = np.array([1, None])", "dtype object"),
])
def test_values_that_are_not_plain_data_cannot_cross(run, source, named):
    sandbox = run("import numpy as np\n" + source + "\ndef give():\n    return value")
    with pytest.raises(Unserializable, match=named) as refused:
        sandbox.get("value")
    with pytest.raises(Unserializable, match=named):
        sandbox.call("give")
    assert refused.value.diagnosis == "unsupported-type"


def test_masked_array_message_tells_the_student_what_to_return(run):
    sandbox = run("import numpy as np\ndef attention(Q):\n    return np.ma.masked_array(Q)")
    with pytest.raises(Unserializable) as refused:
        sandbox.call("attention", np.ones(2))
    assert "numpy.ma.MaskedArray" in str(refused.value)
    assert "plain numpy array" in str(refused.value)


def test_read_only_arguments_arrive_read_only_and_cannot_be_made_writable(run):
    sandbox = run("def probe(a):\n    flags = [a.flags.writeable]\n    try:\n"
                  "        a.flags.writeable = True\n    except ValueError:\n"
                  "        flags.append('refused')\n    return flags")
    assert sandbox.call("probe", np.ones(3), readonly=True) == [False, "refused"]
    assert sandbox.call("probe", np.ones(3)) == [True]


def test_call_with_inputs_shows_in_place_mutation(run):
    sandbox = run("def scale(Q, K=None):\n    Q *= 2\n    K.append(1)\n    return Q.sum()")
    q = np.ones((2, 2))
    result, args, kwargs = sandbox.call_with_inputs("scale", q, K=[0])
    assert result == 8.0
    np.testing.assert_array_equal(args[0], np.full((2, 2), 2.0))
    assert kwargs == {"K": [0, 1]}
    np.testing.assert_array_equal(q, np.ones((2, 2)))  # the trusted copy is untouched


def test_a_measured_call_reports_the_peak_memory_it_allocated_beyond_its_inputs(run):
    sandbox = run("import numpy as np\n"
                  "def square(n):\n    return float(np.ones((n, n)).sum())\n"
                  "def corner(a):\n    return float(a[0, 0])")
    matrix = 1024 * 1024 * 8  # bytes of one (1024, 1024) float64 array
    result, use = sandbox.call_measuring_memory("square", 1024)
    assert result == 1024.0**2 and matrix <= use.traced < 2 * matrix
    assert matrix <= use.resident < 3 * matrix and use.unmeasured == ""
    result, use = sandbox.call_measuring_memory("corner", np.ones((1024, 1024)))
    assert result == 1.0 and use.traced < 64 * 1024  # the argument arrived before the measure
    assert sandbox.call("square", 2) == 4.0  # ordinary calls are not traced


def test_a_call_that_stops_tracemalloc_gets_no_measurement_and_patching_fakes_none(run):
    sandbox = run("import numpy as np\nimport sys\nimport tracemalloc\n"
                  "def stop():\n    tracemalloc.stop()\n    return 1\n"
                  "def patched():\n    tracemalloc.get_traced_memory = lambda: (0, 0)\n"
                  "    worker = sys.modules['_sdpa_sandbox.worker']\n"
                  "    worker.get_traced_memory = worker.reset_peak = lambda *a: (0, 0)\n"
                  "    worker._TRACING_PEAK = lambda call: (call(), 0)\n"
                  "    return float(np.ones((512, 512)).sum())")
    result, use = sandbox.call_measuring_memory("stop")
    assert result == 1 and use.traced is None and use.resident is not None
    _, use = sandbox.call_measuring_memory("patched")
    assert use.traced >= 512 * 512 * 8  # the worker holds its own tracemalloc functions


# Exercise 4's memory test cheated: a (2048, 2048) float64 matrix (32 MiB) hidden from
# tracemalloc. The gauge (`autograder.sandbox.gauge`) reads it from outside the worker.
HIDDEN_MATRIX = {
    "reset_peak": "import tracemalloc\n"
                  "def cheat(n):\n    a = np.ones((n, n))\n    total = float(a.sum())\n"
                  "    del a\n    tracemalloc.reset_peak()\n    return total",
    "_tracemalloc": "import _tracemalloc\n"
                    "def cheat(n):\n    total = float(np.ones((n, n)).sum())\n"
                    "    _tracemalloc.reset_peak()\n    return total",
    "mmap": "import mmap\n"
            "def cheat(n):\n    a = np.frombuffer(mmap.mmap(-1, n * n * 8)).reshape(n, n)\n"
            "    a[:] = 1.0\n    return float(a.sum())",
    "non-dumpable": "import ctypes, tracemalloc\n"
                    "def cheat(n):\n    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\n"
                    "    total = float(np.ones((n, n)).sum())\n"
                    "    tracemalloc.reset_peak()\n    return total",
}


@pytest.mark.parametrize("how", HIDDEN_MATRIX)
def test_a_matrix_hidden_from_tracemalloc_is_seen_from_outside_the_process(run, how):
    sandbox = run("import numpy as np\n" + HIDDEN_MATRIX[how])
    for _ in range(2):  # the second call starts from a raised high-water mark
        result, use = sandbox.call_measuring_memory("cheat", 2048)
        assert result == 2048.0**2
        # 32 MiB, less what the process freed before it: well over exercise 4's 24 MiB
        assert use.traced < 2**20 and use.resident >= 30 * 2**20, use


def test_a_measured_call_can_start_no_process_or_thread_and_its_worker_none_later(run):
    sandbox = run("import os, threading\nimport numpy as np\n"
                  "def child():\n    pid = os.fork()\n    if pid == 0:\n"
                  "        np.ones((2048, 2048)).sum()\n        os._exit(0)\n"
                  "    return os.waitpid(pid, 0)[1]\n"
                  "def thread():\n    threading.Thread(target=print).start()\n    return 1\n")
    with pytest.raises(StudentRaised, match="BlockingIOError"):
        sandbox.call_measuring_memory("child")
    with pytest.raises(StudentRaised, match="can't start new thread|RuntimeError"):
        sandbox.call("thread")
    with pytest.raises(StudentRaised, match="BlockingIOError"):
        sandbox.call("child")


def test_a_worker_running_a_thread_or_a_child_is_not_measured(run):
    thread = run("import threading, time\n"
                 "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
                 "def f():\n    return 1")
    result, use = thread.call_measuring_memory("f")
    assert result == 1 and use.resident is None and "2 threads" in use.unmeasured
    child = run("import subprocess\nsubprocess.Popen(['sleep', '30'])\n"
                "def f():\n    return 1")
    result, use = child.call_measuring_memory("f")
    assert result == 1 and use.resident is None and "child processes" in use.unmeasured


def test_garbage_written_to_the_reply_channel_is_contained(run):
    sandbox = run("import os\ndef forge():\n    for fd in range(3, 64):\n        try:\n"
                  "            os.write(fd, b'SDPA' + b'\\xff' * 40)\n        except OSError:\n"
                  "            pass\n    return 1\ndef honest():\n    return 2")
    with pytest.raises(StudentDied, match="malformed"):
        sandbox.call("forge")
    assert sandbox.call("honest") == 2


FORGER = """
import json, os, struct

def _frame(message):
    text = json.dumps(message).encode()
    return b"SDPA" + struct.pack("!QQ", len(text), 0) + text

def forge(*messages):
    for fd in range(3, 32):
        for request_id in range(1, 40):
            for message in messages:
                try:
                    os.write(fd, _frame(dict(message, id=request_id)))
                except OSError:
                    pass
    return "real answer"

def honest():
    return 2
"""


@pytest.mark.parametrize("reply", [
    {"op": "reply", "ok": False, "kind": "protocol", "message": "forged"},
    {"op": "reply", "ok": False, "kind": ["not", "text"], "type": {"x": 1}},
    {"op": "reply", "ok": "yes", "value": None},
    {"op": "reply", "ok": False, "kind": "missing", "name": 12},
    {"op": "reply", "ok": False, "kind": "forbidden", "module": "numpy"},
])
def test_a_forged_failure_reply_is_the_students_crash_never_the_kits_error(run, reply):
    sandbox = run(FORGER)
    with pytest.raises(StudentDied, match="makes no sense") as died:
        sandbox.call("forge", reply)
    assert died.value.diagnosis == "crashed"
    assert sandbox.call("honest") == 2


@pytest.mark.parametrize("value", [
    {"a": ["<f8", [0, 2**70], 0, 0]},  # no bytes, but a shape numpy cannot build
    {"a": ["<f3", [1], 0, 3]},  # a dtype numpy has no type of
    {"g": ["<b8", 0, 8]},
    {"a": ["|O8", [1], 0, 8]},
])
def test_a_forged_reply_with_a_value_numpy_refuses_is_the_students_crash(run, value):
    sandbox = run(FORGER)
    with pytest.raises(StudentDied, match="malformed reply") as died:
        sandbox.call("forge", {"op": "reply", "ok": True, "value": value})
    assert died.value.diagnosis == "crashed"
    assert sandbox.call("honest") == 2


@pytest.mark.parametrize("message", [
    {"op": "setup-failed", "message": "forged"},
    {"op": "exited", "status": 10**30, "cpu_seconds": 10**400},
    {"op": "ready", "pidns": 1},
])
def test_forged_zygote_messages_are_ignored(run, message):
    sandbox = run(FORGER)
    assert sandbox.call("forge", message) == "real answer"
    assert sandbox.call("honest") == 2


def test_a_submission_forging_replies_is_graded_with_its_crashes(pool):
    source = FORGER + "\n" + "\n".join(
        [pieces.EX1_ROUNDED, pieces.EX2_ROUNDED, pieces.CAUSAL_MASK_TRIU,
         "def softmax(z):\n    forge({'op': 'reply', 'ok': False, 'kind': 'protocol'})\n",
         "def attention(Q, K, V, mask=None):\n    forge({'op': 'reply', 'ok': False, "
         "'kind': 'protocol'})\n"])
    report = grade_content("import numpy as np\n" + source, name="forger.py", limits=FAST,
                           pool=pool)
    assert "kit_errors" not in report
    assert report["exercises"]["ex1"]["score"] == 3
    assert "crashed" in report["exercises"]["ex3"]["diagnoses"]


# -- imports and files ---------------------------------------------------------------------


@pytest.mark.parametrize(("source", "module"), [
    ("import sdpa_ref", "sdpa_ref"),
    ("from sdpa_ref import attention", "sdpa_ref"),
    ("import importlib\nimportlib.import_module('sdpa' + '_ref')", "sdpa_ref"),
    ("__import__('autograder.engine')", "autograder"),
    (f"import sys\nsys.path.insert(0, {str(REPO)!r})\nimport sdpa_course", "sdpa_course"),
    ("import sys\nsys.meta_path[:] = sys.meta_path[1:]\nimport sdpa_ref", "sdpa_ref"),
])
def test_forbidden_imports_are_blocked_and_recorded_in_every_spelling(run, source, module):
    sandbox = run(source + "\ngot_it = True")
    assert sandbox.outcomes[0].status == "error"
    assert not sandbox.has("got_it")
    assert module in sandbox.forbidden_imports


def test_loading_the_reference_by_file_path_gives_nothing(run):
    path = REPO / "sdpa_ref" / "__init__.py"
    sandbox = run("import importlib.util\n"
                  f"spec = importlib.util.spec_from_file_location('x', {str(path)!r})\n"
                  "module = importlib.util.module_from_spec(spec)\n"
                  "spec.loader.exec_module(module)\ngot_it = True")
    assert sandbox.outcomes[0].status == "error"
    assert not sandbox.has("got_it")


def test_import_inside_a_call_raises_forbidden_import(run):
    sandbox = run("def cheat():\n    import sdpa_ref\n    return 1")
    with pytest.raises(ForbiddenImport) as blocked:
        sandbox.call("cheat")
    assert blocked.value.module == "sdpa_ref" and blocked.value.diagnosis == "forbidden-import"


def test_hidden_suites_reference_and_answer_key_are_unreadable(run):
    targets = [REPO / "autograder" / "__init__.py", REPO / "sdpa_ref" / "__init__.py",
               *sorted((REPO / "solutions").rglob("*.ipynb"))[:1],
               *sorted((REPO / "source").rglob("*.ipynb"))[:1]]
    probes = "\n".join(f"try:\n    open({str(t)!r}).read(1)\n    read.append({str(t)!r})\n"
                       "except OSError:\n    pass" for t in targets)
    sandbox = run("read = []\n" + probes)
    assert statuses(sandbox) == ["ok"]
    assert sandbox.get("read") == []


def test_gradebook_passed_as_hidden_path_is_unreadable(tmp_path):
    gradebook = tmp_path / "gradebook.db"
    gradebook.write_text("secret")
    source = f"try:\n    seen = open({str(gradebook)!r}).read()\nexcept OSError:\n    seen = ''"
    with SandboxPool(hidden_paths=[gradebook]) as pool:
        with Sandbox([Cell(source, "cell 1")], limits=FAST, pool=pool) as sandbox:
            sandbox.start()
            assert sandbox.get("seen") == ""


def test_the_paths_the_sandbox_hides_are_not_named_on_any_command_line_it_can_read(tmp_path):
    """The zygote's configuration (the hidden paths among it) reaches it on its standard
    input: a worker is a fork of the zygote and reads the zygote's command line as its own."""
    course = tmp_path / "course-of-the-grader"
    course.mkdir()
    source = ("import os\nlines = []\nfor pid in [p for p in os.listdir('/proc') "
              "if p.isdigit()] + ['self']:\n    try:\n"
              "        lines.append(open(f'/proc/{pid}/cmdline', 'rb').read().decode())\n"
              "    except OSError:\n        pass")
    with SandboxPool(hidden_paths=[course]) as pool:
        with Sandbox([Cell(source, "cell 1")], limits=FAST, pool=pool) as sandbox:
            sandbox.start()
            lines = sandbox.get("lines")
    assert any("python" in line for line in lines)  # the premise: command lines are readable
    assert not [line for line in lines if "course-of-the-grader" in line]


# A course kept under /usr, in a mount namespace of its own: /usr is bound whole into every
# sandbox on the machine, so a course made in the real /usr would be readable by every other
# run's student code while this test lasts (a concurrent suite's `read-hidden-files` case read
# such a gradebook and earned exercise 1). Prints the course's path, waits for a line, then
# prints what a sandbox saw of it without and with the course passed as hidden.
PRIVATE_USR_COURSE = """
import json, os, sys, tempfile
from pathlib import Path
from autograder.sandbox import Cell, Limits, Sandbox, SandboxPool, kernel

top = next(p for p in ("/usr/local/share", "/usr/local/src", "/usr/share") if os.path.isdir(p))
kernel.unshare(kernel.CLONE_NEWNS)
kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)
kernel.mount("tmpfs", top, "tmpfs", 0, "size=1m,mode=755")
course = Path(tempfile.mkdtemp(prefix="sdpa-test-course-", dir=top))
course.chmod(0o755)
(course / "gradebook.db").write_text("secret")
(course / "gradebook.db").chmod(0o644)
print(json.dumps(str(course)), flush=True)
sys.stdin.readline()
source = (f"import os\\ntry:\\n    seen = open({str(course / 'gradebook.db')!r}).read()\\n"
          f"except OSError:\\n    seen = ''\\nlisted = os.listdir({str(course)!r})")
seen = {}
for hidden in ([], [course]):
    with SandboxPool(hidden_paths=hidden) as pool:
        with Sandbox([Cell(source, "cell 1")], limits=Limits(cell_seconds=30), pool=pool) as box:
            box.start()
            seen[str(bool(hidden))] = [box.get("seen"), box.get("listed")]
print(json.dumps(seen), flush=True)
"""


@linux_root
def test_hidden_paths_inside_a_mounted_system_directory_are_masked(run):
    """A course kept under /usr (bound whole into the sandbox) is masked when passed; the
    test's own course lives in a mount namespace of its own, invisible to every other process
    and sandbox on the machine (other runs' hostile readers included)."""
    holder = subprocess.Popen([sys.executable, "-c", PRIVATE_USR_COURSE], cwd=REPO,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        course = json.loads(holder.stdout.readline())
        gradebook = os.path.join(course, "gradebook.db")
        outside = run(f"import os\nshown = os.path.lexists({course!r})\n"
                      f"try:\n    open({gradebook!r}).read()\n    read = True\n"
                      f"except OSError:\n    read = False")
        assert not os.path.lexists(course)
        assert (outside.get("shown"), outside.get("read")) == (False, False)
        holder.stdin.write("go\n")
        holder.stdin.flush()
        seen = json.loads(holder.stdout.readline())
    finally:
        holder.stdin.close()
        holder.wait(timeout=120)
    assert holder.returncode == 0
    assert seen["False"] == ["secret", ["gradebook.db"]]  # /usr is there: the premise
    assert seen["True"] == ["", []]


@linux_root
def test_the_kits_installed_files_and_the_rest_of_the_virtualenv_are_not_there(run):
    """An editable install copies source/ and solutions/ into site-packages/sdpa_course/data:
    only allowlisted packages (numpy, matplotlib and what they need) show in site-packages."""
    import importlib.metadata

    site_packages = Path(np.__file__).resolve().parent.parent
    kit = importlib.metadata.distribution("sdpa-course")
    kit_files = [str(Path(str(kit.locate_file(f))).resolve()) for f in kit.files or ()]
    assert any("/solutions/" in f for f in kit_files)  # the answer key is installed here
    sandbox = run("import os\n"
                  f"listed = sorted(os.listdir({str(site_packages)!r}))\n"
                  f"present = [f for f in {kit_files!r} if os.path.lexists(f)]")
    listed = sandbox.get("listed")
    assert sandbox.get("present") == []
    assert "numpy" in listed and "matplotlib" in listed and "contourpy" in listed
    assert not any(name.startswith(("sdpa", "nbgrader", "pytest", "jupyter", "_editable"))
                   for name in listed), listed


@linux_root
def test_network_connections_fail(run):
    sandbox = run("import socket\nerrors = []\nfor host in ('127.0.0.1', '1.1.1.1'):\n"
                  "    try:\n        socket.create_connection((host, 80), timeout=0.5)\n"
                  "    except OSError as exc:\n        errors.append(type(exc).__name__)")
    assert len(sandbox.get("errors")) == 2


@linux_root
def test_student_runs_unprivileged_in_an_empty_workdir_with_a_scrubbed_environment(run):
    sandbox = run("import os\nuid = os.getuid()\nfiles = os.listdir('.')\n"
                  "env = sorted(os.environ)\nhome = os.environ['HOME'] == os.getcwd()")
    assert sandbox.get("uid") == sandbox.uid != 0
    assert sandbox.get("files") == [] and sandbox.get("home") is True
    assert set(sandbox.get("env")) <= {"PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "LANG",
                                       "MPLBACKEND", "MPLCONFIGDIR", "PYTHONDONTWRITEBYTECODE",
                                       "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                       "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                                       "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"}


def test_nothing_of_the_zygotes_environment_reaches_student_code(run, monkeypatch):
    # The pool starts its zygote with a few variables already; whatever it held, a worker
    # starts from an environment of its own.
    from autograder.sandbox import pool as pool_module
    started = pool_module._zygote_environment
    monkeypatch.setattr(pool_module, "_zygote_environment",
                        lambda: started() | {"SDPA_GRADER_TOKEN": "s3cret", "PYTHONPATH": "/x"})
    with SandboxPool() as own:
        sandbox = run("import os\nenv = dict(os.environ)", sandbox_pool=own)
        env = sandbox.get("env")
    assert "SDPA_GRADER_TOKEN" not in env and "PYTHONPATH" not in env, env
    assert env["HOME"] == env["MPLCONFIGDIR"].rpartition("/")[0]


# -- processes -----------------------------------------------------------------------------


@linux_root
def test_setsid_and_double_fork_daemons_are_gone_after_close(run):
    sandbox = run("import subprocess, os, time\n"
                  "subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
                  "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                  "        while True:\n            open('beacon', 'w').write('alive')\n"
                  "            time.sleep(0.05)\n    os._exit(0)\n"
                  "time.sleep(0.2)")
    assert statuses(sandbox) == ["ok"]
    assert len(processes_of(sandbox.uid)) >= 3  # worker, sleep, daemon
    sandbox.close()
    assert processes_of(sandbox.uid) == []


@linux_root
def test_fork_bomb_is_bounded_and_cleaned_up(run):
    limits = Limits(cell_seconds=2, call_seconds=1, processes=16, max_restarts=2)
    sandbox = run("import os\nfor _ in range(64):\n    try:\n        os.fork()\n"
                  "    except OSError:\n        break", "after = 1", limits=limits)
    assert len(processes_of(sandbox.uid)) <= limits.processes
    sandbox.close()
    assert processes_of(sandbox.uid) == []


# -- the explicit unsafe opt-out ------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:UNSAFE")
def test_unsafe_isolation_warns_and_still_times_out_and_blocks_imports(run):
    with SandboxPool(isolation="unsafe-none") as weak:
        sandbox = run("import importlib\ntry:\n    importlib.import_module('sdpa_ref')\n"
                      "except ImportError:\n    blocked = True",
                      f"try:\n    open({str(REPO / 'autograder' / '__init__.py')!r}).read()\n"
                      "    leaked = True\nexcept OSError:\n    leaked = False",
                      "while True:\n    pass", "after = 1", sandbox_pool=weak)
        assert statuses(sandbox) == ["ok", "ok", "timeout", "ok"]
        assert sandbox.get("blocked") is True and sandbox.get("leaked") is False
        assert "sdpa_ref" in sandbox.forbidden_imports
        assert any(w.startswith("UNSAFE") for w in sandbox.warnings)
        assert sandbox.isolation == "unsafe-none"
        sandbox.close()


# -- sharing a pool --------------------------------------------------------------------------


def test_one_pool_serves_sandboxes_from_several_threads(pool):
    from concurrent.futures import ThreadPoolExecutor

    def grade(i: int) -> int:
        cells = [Cell(f"import numpy\nnumpy.sum = lambda *a, **k: {i}\n"
                      "def f():\n    return int(numpy.sum([1, 1]))", "cell 1")]
        with Sandbox(cells, limits=FAST, pool=pool) as sandbox:
            sandbox.start()
            return sandbox.call("f")

    with ThreadPoolExecutor(4) as threads:
        assert list(threads.map(grade, range(8))) == list(range(8))


@linux_root
def test_a_killed_zygote_takes_its_workers_along_and_is_restarted():
    import signal

    with SandboxPool() as own:
        sandbox = Sandbox([Cell("x = 1", "cell 1")], limits=FAST, pool=own)
        sandbox.start()
        uid = sandbox.uid
        os.kill(own._process.pid, signal.SIGKILL)
        own._process.wait()
        deadline = time.monotonic() + 30  # they go at once; a loaded machine is slower
        while processes_of(uid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert processes_of(uid) == []
        with pytest.raises(StudentDied):
            sandbox.call("x")
        sandbox.close()
        with Sandbox([Cell("y = 2", "cell 1")], limits=FAST, pool=own) as fresh:
            fresh.start()
            assert fresh.get("y") == 2


def test_student_code_runs_with_the_garbage_collector_on(run):
    # the zygote imports with it off, for speed, and turns it back on before any fork
    sandbox = run("import gc\ndef collecting():\n    return gc.isenabled()")
    assert sandbox.call("collecting") is True


def test_a_pool_started_without_waiting_is_ready_at_the_first_sandbox():
    early = SandboxPool()
    try:
        early.start(wait=False)  # the zygote boots while the caller reads the submission
        with Sandbox([Cell("z = 3", "cell 1")], limits=FAST, pool=early) as sandbox:
            sandbox.start()
            assert sandbox.get("z") == 3
    finally:
        early.close()


@pytest.mark.filterwarnings("ignore:UNSAFE")
def test_unsafe_isolation_refuses_processes_signals_network_and_native_code(run):
    probes = {
        "process": "import subprocess\nsubprocess.run(['true'])",
        "signal": "import os, signal\nos.kill(os.getppid(), signal.SIGTERM)",
        "network": "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=0.2)",
        "native": "import ctypes\nctypes.CDLL(None).getpid()",
    }
    with SandboxPool(isolation="unsafe-none") as weak:
        sandbox = run(*probes.values(), sandbox_pool=weak)
        assert statuses(sandbox) == ["error"] * 4
        assert all(o.error.startswith("PermissionError") for o in sandbox.outcomes)
        sandbox.close()


def test_a_worker_flooding_its_socket_between_calls_cannot_stall_the_pool(run):
    import signal

    sandbox = run("import os, threading, time\ndef flood():\n    def spam():\n"
                  "        time.sleep(0.1)\n        while True:\n"
                  "            for fd in range(3, 32):\n"
                  "                try:\n                    os.write(fd, b'x' * 65536)\n"
                  "                except OSError:\n                    pass\n"
                  "    threading.Thread(target=spam, daemon=True).start()\n    return 1")
    assert sandbox.call("flood") == 1
    time.sleep(0.4)  # its socket fills up while nobody reads it
    os.kill(sandbox.pid, signal.SIGKILL)  # the zygote's exit report now meets a full socket
    time.sleep(0.1)
    started = time.monotonic()
    fresh = run("ok = 1")
    assert fresh.get("ok") == 1 and time.monotonic() - started < 10


def test_arguments_that_are_not_plain_data_are_the_graders_error(run):
    sandbox = run("def f(x):\n    return 1")
    with pytest.raises(TypeError, match="cannot send"):
        sandbox.call("f", object())
    assert sandbox.call("f", 1) == 1


def test_limits_cannot_be_changed_by_the_code_that_holds_them():
    # One Limits is shared by every sandbox of a class: no sandbox may loosen it for others.
    with pytest.raises(dataclasses.FrozenInstanceError):
        FAST.memory_mb = 1 << 20  # type: ignore[misc]

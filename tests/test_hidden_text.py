"""Nothing a submission's code writes while it runs on the hidden inputs reaches a student.

Two attacking notebooks (the answer key with a last cell that replaces its functions):
- `SPEAKS` writes what it is given everywhere it can: exception messages (plain, hex, a
  string of letters standing for digits), stdout, stderr, warnings, an object of a class
  named after the input, a returned shape, an exit code, and the notebook's own
  `YOUR_VARIANT` set from the input;
- `ENCODES` says nothing, but picks per input the class of the exception it raises
  (ten classes of its own) and the line it raises it from.
Their markers are put together while they run ("ZQ" + "XJ"), so that their source, which
the student sees on every page, does not hold them. Each is checked with `check --json`,
`check`'s table, and `grade` on a course (its `--json`, feedback pages, autograded
notebooks, CSVs, class report and gradebook): no marker, no hidden input's digits, at most
one line of the student's code named by the hidden tests.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from grade_course_factory import answer_key, released_course, submit, variant_of, with_code

REPO = Path(__file__).resolve().parent.parent

# Six digits of the first number it is given, in whatever the function receives.
_DIGITS = '''
import sys as _sys
import warnings as _warnings
import numpy as _np
_MARK = "ZQ" + "XJ"
def _digits(x):
    a = _np.asarray(x, dtype=float).ravel()
    return f"{abs(float(a[0])):.6f}".split(".")[1] if a.size else "000000"
'''

SPEAKS = _DIGITS + '''
def _speak(x):
    d = _digits(x)
    global YOUR_VARIANT
    YOUR_VARIANT = format(int(d) % 16**6, "06x")
    print(_MARK + "out" + repr(_np.asarray(x).tolist()))
    print(_MARK + "err" + d, file=_sys.stderr)
    _warnings.warn(_MARK + "warn" + d)
    return d
def softmax(z, axis=-1):
    raise ValueError(_MARK + "msg" + repr(_np.asarray(z).tolist()) + _speak(z))
def attention(Q, K, V, mask=None):
    d = _speak(Q)
    raise ValueError(_MARK + "hex" + hex(int(d)) + repr(Q.tolist()) + repr(K.tolist()))
def causal_mask(T):
    return type(_MARK + "cls" + str(T), (), {})()
def rows_sum_to_one(w):
    d = _speak(w)
    raise RuntimeError(_MARK + d.translate(str.maketrans("0123456789", "abcdefghij")))
def future_is_zero(w):
    return _np.zeros((9000 + 900 + int(_speak(w)[0]),))
_calls = []
def attention_blockwise(Q, K, V, causal=False, block=64):
    _calls.append(1)
    if len(_calls) > 1:
        import os
        os._exit(200 + int(_digits(Q)[0]))
    return _np.zeros((9000 + 900 + int(_speak(Q)[0]), 3))
'''

ENCODES = _DIGITS + '''
_KINDS = [type("Zq" + "xj" + str(i), (Exception,), {}) for i in range(10)]
def _raise_by(x):
    d = int(_digits(x)[0])
    if d == 0: raise _KINDS[0]()
    if d == 1: raise _KINDS[1]()
    if d == 2: raise _KINDS[2]()
    if d == 3: raise _KINDS[3]()
    if d == 4: raise _KINDS[4]()
    if d == 5: raise _KINDS[5]()
    if d == 6: raise _KINDS[6]()
    if d == 7: raise _KINDS[7]()
    if d == 8: raise _KINDS[8]()
    raise _KINDS[9]()
def softmax(z, axis=-1):
    _raise_by(z)
def attention(Q, K, V, mask=None):
    _raise_by(Q)
def causal_mask(T):
    _raise_by([T / 7])
def rows_sum_to_one(w):
    _raise_by(w)
def future_is_zero(w):
    _raise_by(w)
def attention_blockwise(Q, K, V, causal=False, block=64):
    _raise_by(Q)
'''

# The markers, the shape (99xx, ...) and the exit code 20x the attack chooses (not where a
# hex id holds the same digits).
MARKERS = re.compile(r"ZQXJ|Zqxj|(?<![0-9A-Za-z])990[0-9](?![0-9A-Za-z])|exited with code 2")
_LOCATION = re.compile(r"\(cell (\d+), line (\d+)\)")


def _attack(source: str):
    return with_code(answer_key(), source)


def _without_images(text: str) -> str:
    """Base64 figures (where any four letters may turn up) taken out of a page or JSON."""
    text = re.sub(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=\s]+", "", text)
    return re.sub(r'"image/png": "[A-Za-z0-9+/=\\n]*"', "", text)


def _hidden_numbers(variant) -> set[str]:
    """The digits of every hidden input of exercise 3 (the first numbers of each array)."""
    from autograder.suites.test_ex3 import hidden_inputs

    found = set()
    for value in hidden_inputs(variant).values():
        for array in value if isinstance(value, tuple) else (value,):
            flat = getattr(array, "ravel", lambda: [])()
            for x in list(flat)[:4]:
                if isinstance(x, float) or getattr(x, "dtype", None) is not None:
                    number = abs(float(x))
                    if number not in (0.0, 1.0):
                        found.add(f"{number:.6f}".split(".")[1])
    return found


def _assert_nothing_hidden(text: str, where: str, hidden_numbers=frozenset()) -> None:
    text = _without_images(text)
    found = MARKERS.search(text)
    assert found is None, f"{found.group(0)!r} reached {where}: {text[found.start() - 200:][:400]}"
    for digits in hidden_numbers:  # the digits after the point of a number in Python's repr
        assert f".{digits}" not in text, f"a hidden input (0.{digits}...) reached {where}"


def _hidden_test_messages(report: dict) -> list[str]:
    return [t["message"] for ex in report["exercises"].values() for t in ex["tests"]
            if not t["passed"]]


def _check(path: Path, *extra: str) -> str:
    done = subprocess.run([sys.executable, "-m", "sdpa_course.cli", "check", str(path), *extra],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SDPA_COURSE_WARM_SANDBOX": "0"})
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def attacks(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("attacks")
    paths = {}
    for name, source in (("speaks", SPEAKS), ("encodes", ENCODES)):
        paths[name] = folder / f"{name}.ipynb"
        nbformat.write(_attack(source), str(paths[name]))
    return paths


@pytest.mark.parametrize("name", ["speaks", "encodes"])
def test_check_shows_nothing_a_hidden_call_wrote(attacks, name):
    from autograder.variants import DEFAULT

    hidden = _hidden_numbers(DEFAULT)
    report = json.loads(_check(attacks[name], "--json"))
    assert report["score"] < report["max_score"]
    _assert_nothing_hidden(json.dumps(report), "check --json", hidden)
    _assert_nothing_hidden(_check(attacks[name]), "check's table", hidden)
    assert report["variant"]["shown"] in (None, "default")
    # One place in each function at most: a raise chosen per input names no line.
    locations: dict[str, set] = {}
    for text in _hidden_test_messages(report):
        function = re.search(r"calling (\w+)", text)
        for location in _LOCATION.findall(text):
            locations.setdefault(function.group(1) if function else "", set()).add(location)
    assert all(len(found) <= 1 for found in locations.values()), locations
    # Every test the hidden inputs broke still says which exception, in the kit's words.
    crashed = [t for t in _hidden_test_messages(report) if "withheld" in t]
    assert crashed, _hidden_test_messages(report)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, attacks):
    course = released_course(tmp_path_factory.mktemp("hidden") / "course")
    for name in attacks:
        submit(course, name, nbformat.read(str(attacks[name]), as_version=4))
    done = subprocess.run([sys.executable, "-m", "sdpa_course.cli", "grade", "--course-dir",
                           str(course), "--workers", "2", "--json"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return course, done.stdout


def _received(course: Path) -> dict[str, str]:
    """Every file grading wrote that a student or formgrader can be shown, by path."""
    skipped = {"submitted", "source", "release"}
    files = {}
    for path in sorted(course.rglob("*")):
        relative = path.relative_to(course)
        if path.suffix == ".db":  # the gradebook: its comments are what formgrader shows
            files[str(relative)] = "\n".join(_comments(path))
        elif path.is_file() and relative.parts[0] not in skipped:
            files[str(relative)] = path.read_bytes().decode("utf-8", "replace")
    return files


def _comments(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT auto_comment, manual_comment FROM comment").fetchall()
    return [text for row in rows for text in row if text]


def test_grade_shows_nothing_a_hidden_call_wrote(graded):
    course, json_output = graded
    hidden = set().union(*(_hidden_numbers(variant_of(course, s)) for s in ("speaks", "encodes")))
    _assert_nothing_hidden(json_output, "grade --json", hidden)
    files = _received(course)
    kinds = {"feedback": ".html", "autograded": ".ipynb", "csv": ".csv"}
    for part, suffix in kinds.items():
        assert any(part in p or p.endswith(suffix) for p in files), f"no {part} written"
    for path, text in files.items():
        _assert_nothing_hidden(text, path, hidden)
    for student in ("speaks", "encodes"):
        page = (course / "feedback" / student / "sdpa" / "attention.html").read_text()
        assert "withheld" in page


# -- the vocabulary, one StudentError at a time ------------------------------------------------


def test_an_exception_keeps_its_builtin_type_and_first_place_and_loses_its_message():
    from autograder.sandbox import StudentRaised
    from autograder.withheld import OWN_CLASS, WITHHELD, Located, withhold

    located = Located()
    first = withhold(StudentRaised("ValueError", "ZQXJ 0.123", "cell 4, line 2"), "softmax",
                     "calling softmax", located)
    assert str(first) == f"ValueError (cell 4, line 2); {WITHHELD}"
    assert first.message == "" and first.type_name == "ValueError"
    other = withhold(StudentRaised("Zqxj7", "x", "cell 4, line 9"), "softmax",
                     "calling softmax", located)
    assert str(other) == f"{OWN_CLASS} (another line of your code); {WITHHELD}"
    own = withhold(StudentRaised("TypeError", "", "cell 5, line 1"), "attention",
                   "calling attention", located)  # each function's own first place
    assert "(cell 5, line 1)" in str(own)


@pytest.mark.parametrize(("type_name", "message", "kept"), [
    ("ModuleNotFoundError", "No module named 'scipy.special'", "No module named 'scipy'"),
    ("ModuleNotFoundError", "No module named 'q928957'", ""),
    ("NameError", "name 'scipy_softmax' is not defined", "name 'scipy_softmax' is not defined"),
    ("ValueError", "No module named 'scipy'", ""),
])
def test_only_a_known_module_or_an_undefined_name_is_read_from_a_message(
        type_name, message, kept):
    from autograder.sandbox import StudentRaised
    from autograder.withheld import Located, withhold

    err = withhold(StudentRaised(type_name, message, ""), "softmax", "calling softmax",
                   Located())
    assert err.message == kept and message not in str(err)


@pytest.mark.parametrize("err", [
    "StudentDied('`f(...)` stopped: the process exited with code 213')",
    "StudentDied('the submission\\'s process sent a reply that makes no sense (kind ZQXJ)')",
    "StudentMemoryLimit('MemoryError: ZQXJ (cell 3, line 4)')",
    "MissingName('ZQXJ')",
    "Unserializable('f returned a ZQXJ1 (item [0]); return plain numbers, lists, tuples or "
    "numpy arrays')",
    "Unserializable('f returned a value too large to send back (213 bytes)')",
])
def test_a_dead_process_a_forged_reply_or_an_object_says_nothing_chosen(err):
    from autograder import sandbox
    from autograder.withheld import Located, withhold

    raised = eval(err, vars(sandbox))  # noqa: S307 - the test's own literals
    told = str(withhold(raised, "f", "calling f", Located()))
    assert "ZQXJ" not in told and "213" not in told, told
    assert told


def test_a_plain_type_that_cannot_cross_is_still_named():
    from autograder.sandbox import Unserializable
    from autograder.withheld import Located, withhold

    told = withhold(Unserializable("causal_mask returned an ellipsis; return plain numbers, "
                                   "lists, tuples or numpy arrays"), "causal_mask",
                    "calling causal_mask", Located())
    assert str(told) == ("causal_mask returned an ellipsis; return plain numbers, lists, "
                         "tuples or numpy arrays")

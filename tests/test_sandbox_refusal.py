"""Refuse instead of degrading: without user namespaces no pool starts, and says what to do;
only `isolation="unsafe-none"`, asked for, runs student code, and says so everywhere.

The refusing machine: `sandbox_graders.without_user_namespaces`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import textwrap

import pytest
from sandbox_graders import CAN_REFUSE_NAMESPACES
from sandbox_graders import without_user_namespaces as run_without_user_namespaces

from autograder.corpus import case
from autograder.sandbox import Cell, Limits, Sandbox, SandboxPool

needs_unshare = pytest.mark.skipif(
    not CAN_REFUSE_NAMESPACES, reason="a machine without user namespaces is made with "
    "unshare(1) on Linux")


@needs_unshare
def test_a_pool_refuses_and_says_what_to_do(tmp_path):
    script = textwrap.dedent("""
        from autograder.sandbox import Cell, IsolationUnavailable, Sandbox, SandboxPool
        try:
            with Sandbox([Cell("x = 1", "cell 1")]) as sandbox:   # the default pool
                sandbox.start()
            print("ran student code")
        except IsolationUnavailable as refused:
            print(refused)
        """)
    done = run_without_user_namespaces([sys.executable, "-c", script], tmp_path)
    assert done.returncode == 0, done.stderr
    message = done.stdout
    assert "ran student code" not in message
    assert message.startswith("sandbox isolation is unavailable: the kernel refused new user")
    for advice in ("user.max_user_namespaces", "kernel.unprivileged_userns_clone",
                   "run the grader as root", "--unsafe-no-isolation",
                   "isolation='unsafe-none'"):
        assert advice in message


@needs_unshare
def test_the_unsafe_opt_out_runs_and_every_report_says_so(tmp_path):
    path = case("lesson-style").write(tmp_path)
    script = textwrap.dedent(f"""
        import json
        from autograder.engine import grade_submission
        from autograder.sandbox import SandboxPool
        with SandboxPool(isolation="unsafe-none") as pool:
            print(json.dumps(grade_submission({str(path)!r}, pool=pool)))
        """)
    done = run_without_user_namespaces([sys.executable, "-W", "ignore", "-c", script], tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["score"] == 20
    assert report["warnings"][0].startswith("UNSAFE: student code ran without isolation")


@needs_unshare
def test_check_runs_unisolated_on_such_a_machine_with_one_line_saying_so(tmp_path):
    path = case("lesson-style").write(tmp_path)
    done = run_without_user_namespaces(
        [sys.executable, "-m", "sdpa_course.cli", "check", str(path), "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "sdpa-course check: this machine refuses the sandbox's isolation"), done.stderr
    report = json.loads(done.stdout)
    assert report["score"] == 20 and report["warnings"][0].startswith("UNSAFE")


def test_an_unknown_isolation_is_refused():
    with pytest.raises(ValueError, match="namespaces"):
        SandboxPool(isolation="none")


@pytest.mark.parametrize("isolation", ["namespaces", "unsafe-none"])
@pytest.mark.filterwarnings("ignore:UNSAFE")
def test_no_sandbox_folder_is_left_in_the_temporary_directory(tmp_path, monkeypatch, isolation):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with SandboxPool(isolation=isolation) as pool:
        cells = [Cell("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('a.png')\n"
                      "open('left-in-the-workdir', 'w').write('x')", "cell 1")]
        with Sandbox(cells, limits=Limits(), pool=pool) as sandbox:
            assert [o.status for o in sandbox.start()] == ["ok"]
    assert os.listdir(scratch) == []

"""`sdpa-course grade` and the Dask workers refuse to run student code without the sandbox's
isolation, and say what to do; `--unsafe-no-isolation`, typed by the instructor, grades anyway
and is recorded in the class result, each student's record and the class report. The
refusing machine: `sandbox_graders.without_user_namespaces`."""

from __future__ import annotations

import io
import json
import sys
import textwrap

import pytest
from grade_course_factory import released_course, submit, with_deadline
from sandbox_graders import CAN_REFUSE_NAMESPACES, without_user_namespaces

from autograder.sandbox import Limits
from sdpa_course.errors import KitError
from sdpa_course.grading.grade import (
    DEADLINE_MARGIN,
    ClassGrading,
    ClassResult,
    _print_summary,
    grade_course,
)

needs_unshare = pytest.mark.skipif(
    not CAN_REFUSE_NAMESPACES, reason="a machine without user namespaces is made with "
    "unshare(1) on Linux")


def grade_command(course, *flags):
    return [sys.executable, "-m", "sdpa_course.cli", "grade", "--course-dir", str(course),
            "--workers", "1", *flags]


@needs_unshare
@pytest.mark.slow
def test_grade_refuses_to_run_student_code_and_says_what_to_do(tmp_path):
    course = released_course(tmp_path / "course")
    submit(course, "ada")
    done = without_user_namespaces(grade_command(course, "--json"), tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("sdpa-course grade: refusing to run student code: sandbox "
                                  "isolation is unavailable"), done.stderr
    assert "--unsafe-no-isolation" in done.stderr and "run the grader as root" in done.stderr
    assert not (course / "reports" / "sdpa" / "results").exists()  # nobody graded or failed


@needs_unshare
@pytest.mark.slow
def test_grade_with_unsafe_no_isolation_grades_and_records_it_everywhere(tmp_path):
    course = released_course(tmp_path / "course")
    submit(course, "ada")
    done = without_user_namespaces(grade_command(course, "--json", "--unsafe-no-isolation"),
                                   tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["isolation"] == "unsafe-none"
    assert result["students"]["ada"]["status"] == "graded"
    assert result["students"]["ada"]["score"] == 20
    record = json.loads((course / "reports/sdpa/results/ada.json").read_text())
    assert record["isolation"] == "unsafe-none"
    page = (course / "reports/sdpa/class_report.html").read_text()
    assert "UNSAFE: graded with --unsafe-no-isolation" in page and "ada" in page


def test_the_summary_of_an_unsafe_run_begins_by_saying_so():
    summary = io.StringIO()
    _print_summary(ClassResult("sdpa", {}, isolation="unsafe-none"), summary)
    assert summary.getvalue().startswith("UNSAFE: graded with --unsafe-no-isolation")
    summary = io.StringIO()
    _print_summary(ClassResult("sdpa", {}), summary)
    assert "UNSAFE" not in summary.getvalue()


def test_an_isolated_run_records_namespaces(tmp_path):
    course = released_course(tmp_path / "course")
    submit(course, "ada")
    result = grade_course(course, workers=1)
    assert result.isolation == "namespaces" and result.as_json()["isolation"] == "namespaces"
    assert result.records["ada"]["isolation"] == "namespaces"
    assert "UNSAFE" not in (course / "reports/sdpa/class_report.html").read_text()


@needs_unshare
def test_a_dask_worker_refuses_without_isolation_unless_the_instructor_opted_out(tmp_path):
    pytest.importorskip("distributed")
    script = textwrap.dedent("""
        from sdpa_course.grading.dask_worker import GradingPlugin, KitMismatch
        from sdpa_course.grading.kit_version import kit_fingerprint

        class Worker:
            address = "tcp://10.0.0.7:40001"

        try:
            GradingPlugin(kit_fingerprint()).setup(Worker())
            print("set up")
        except KitMismatch as refused:
            print(refused)
        unsafe = GradingPlugin(kit_fingerprint(), "unsafe-none")
        unsafe.setup(Worker())
        print(unsafe.pool().mode)
        unsafe.teardown(Worker())
        """)
    done = without_user_namespaces([sys.executable, "-W", "ignore", "-c", script], tmp_path)
    assert done.returncode == 0, done.stderr
    refusal, mode = done.stdout.strip().splitlines()
    assert refusal.startswith("the Dask worker at tcp://10.0.0.7:40001 refuses to grade: "
                              "refusing to run student code: sandbox isolation is unavailable")
    assert mode == "unsafe-none"


def test_the_submission_deadline_stays_a_backstop_above_the_sandbox_budget(tmp_path):
    assert ClassGrading().submission_deadline > Limits().submission_seconds + DEADLINE_MARGIN
    course = released_course(tmp_path / "course")
    submit(course, "ada")
    with_deadline(course, Limits().submission_seconds)
    with pytest.raises(KitError, match="submission_deadline must stay above"):
        grade_course(course, workers=1)


def test_a_class_is_graded_from_one_zygote_shared_by_the_grading_processes(tmp_path,
                                                                           monkeypatch):
    from autograder.sandbox import SandboxPool

    launches = tmp_path / "launches"
    launch = SandboxPool._begin_launch

    def counted(pool):  # in this process and in the grading processes forked from it
        with launches.open("a") as log:
            log.write("launch\n")
        launch(pool)

    monkeypatch.setattr(SandboxPool, "_begin_launch", counted)
    course = released_course(tmp_path / "course")
    for student in ("ada", "ben", "cy"):
        submit(course, student)
    result = grade_course(course, workers=2)
    assert launches.read_text().splitlines() == ["launch"]
    assert {s: r["score"] for s, r in result.records.items()} == {"ada": 20, "ben": 20, "cy": 20}
    assert {r["isolation"] for r in result.records.values()} == {"namespaces"}

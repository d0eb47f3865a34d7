"""`sdpa-course grade --scheduler`: a class graded on a real Dask cluster on loopback.

A `dask scheduler` and two `dask worker` processes (tests/dask_cluster.py) grade a class of 50
(the answer key twice, a broken notebook and 47 cases of the engine's corpus: every hostile
one but the two that spin until a time limit, and the first correct and mistaken ones, built
as notebooks the way the demo does) while one worker is
killed in the middle of a task; the same class is graded by the local
pool, and both must agree student by student. A second, smaller class sees its scheduler
killed: the run stops with a clear message and a consistent gradebook, and a rerun on a new
cluster grades only the rest.
"""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import pytest
from dask_cluster import kill_group, start_cluster, wait_until
from grade_course_factory import (
    answer_key,
    copy_course,
    released_course,
    submit,
    variant_of,
)
from loopback import unused_address
from nbgrader.api import Gradebook

from autograder.corpus import case as corpus_case
from autograder.corpus import cases
from sdpa_course.cli import main
from sdpa_course.demo import notebook_from_source
from sdpa_course.errors import KitError
from sdpa_course.grading.grade import grade_course
from sdpa_course.reports import records

pytestmark = [pytest.mark.dask, pytest.mark.slow]

SLOW_CASES = {"loop-at-import", "loop-in-call"}  # each spins until a time limit
BROKEN = "broken-json"


def class_corpus() -> list:
    """47 corpus cases: every hostile one but the slow, then correct and mistaken ones."""
    eligible = [case for case in cases() if case.name not in SLOW_CASES]
    hostile = [case for case in eligible if case.kind == "hostile"]
    others = [case for case in eligible if case.kind != "hostile"]
    return others[: 47 - len(hostile)] + hostile


def build_class(course: Path, corpus: list) -> list[str]:
    key = answer_key()
    submit(course, "answer-key", key)
    submit(course, "answer-key-again", key)
    submit(course, BROKEN, text='{"cells": [ this is not json')
    students = ["answer-key", "answer-key-again", BROKEN]
    for i, case in enumerate(corpus):
        student = f"s{i:02d}-{case.name}"
        own = corpus_case(case.name, variant_of(course, student))  # the student's numbers
        submit(course, student, notebook_from_source(key, own.source))
        students.append(student)
    return students


def devnull():
    return open(os.devnull, "w")


def recorded(course: Path) -> set[str]:
    return set(records.load_records(course / "reports" / "sdpa"))


def gradebook_students(course: Path) -> list[str]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return sorted(s.student.id for s in gradebook.assignment_submissions("sdpa"))


@pytest.fixture(scope="module")
def class_of_50(tmp_path_factory) -> tuple[Path, list[str]]:
    course = released_course(tmp_path_factory.mktemp("class50") / "course")
    students = build_class(course, class_corpus())
    assert len(students) == 50
    return course, students


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = start_cluster(tmp_path_factory.mktemp("dask"), workers=2)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def graded_locally(class_of_50, tmp_path_factory):
    course = copy_course(class_of_50[0], tmp_path_factory.mktemp("local") / "course")
    return grade_course(course, workers=2, progress_stream=devnull())


class WorkerKiller(threading.Thread):
    """Kills, once a few students are recorded, a worker that is grading one right now."""

    def __init__(self, cluster, course: Path, after: int = 5):
        super().__init__(daemon=True)
        self.cluster, self.course, self.after = cluster, course, after
        self.killed: str | None = None
        self.recorded_then = 0
        self.stop = threading.Event()

    def run(self) -> None:
        from distributed import Client

        with Client(self.cluster.address, set_as_default=False) as client:
            def busy_worker() -> str | None:
                if self.stop.is_set() or len(recorded(self.course)) < self.after:
                    return None
                return next((w for w, keys in client.processing().items() if keys), None)

            if not wait_until(lambda: busy_worker() or self.stop.is_set(), timeout=120):
                return
            worker = busy_worker()
            if worker is None:
                return
            group = self.cluster.worker_group(worker)
            self.recorded_then = len(recorded(self.course))
            kill_group(group)
            self.killed = worker


@pytest.fixture(scope="module")
def graded_on_dask(class_of_50, cluster, tmp_path_factory):
    course = copy_course(class_of_50[0], tmp_path_factory.mktemp("dask") / "course")
    killer = WorkerKiller(cluster, course)
    killer.start()
    progress = io.StringIO()
    try:
        result = grade_course(course, scheduler=cluster.address, progress_stream=progress)
    finally:
        killer.stop.set()
        killer.join(timeout=30)
    return course, result, killer, progress.getvalue()


def test_every_student_is_recorded_exactly_once_on_dask(class_of_50, graded_on_dask):
    course, result, _, _ = graded_on_dask
    students = class_of_50[1]
    assert sorted(result.graded_now) == sorted(students)  # one outcome taken per student
    assert result.failed == [BROKEN]
    assert gradebook_students(course) == sorted(set(students) - {BROKEN})
    assert recorded(course) == set(students)


def test_dask_grades_every_student_as_the_local_pool_does(graded_on_dask, graded_locally):
    _, on_dask, _, _ = graded_on_dask

    def summary(record):
        return (record["status"], record["score"],
                {ex: (e["score"], e["diagnoses"]) for ex, e in record["exercises"].items()})

    assert {s: summary(r) for s, r in on_dask.records.items()} \
        == {s: summary(r) for s, r in graded_locally.records.items()}


def test_a_worker_killed_mid_task_has_its_submission_graded_elsewhere(
        class_of_50, cluster, graded_on_dask):
    from distributed import Client

    _, result, killer, _ = graded_on_dask
    assert killer.killed, "no worker was caught grading: nothing was killed"
    assert killer.recorded_then < len(class_of_50[1])  # it died mid-run
    with Client(cluster.address, set_as_default=False) as client:
        assert killer.killed not in client.scheduler_info(n_workers=-1)["workers"]
    assert len(result.records) == 50


def test_progress_counts_every_finished_submission(graded_on_dask):
    *_, progress = graded_on_dask
    assert progress.strip().splitlines()[-1].startswith("grading: 50/50 done")


def test_a_worker_with_other_exercises_refuses_to_grade(
        class_of_50, cluster, graded_on_dask, tmp_path, monkeypatch):
    import sdpa_course.grading.dask_executor as dask_executor

    course = copy_course(class_of_50[0], tmp_path / "course")
    real = dask_executor.kit_fingerprint()
    monkeypatch.setattr(dask_executor, "kit_fingerprint",
                        lambda: {**real, "exercises": "0123456789abcdef"})
    with pytest.raises(KitError) as refused:
        grade_course(course, scheduler=cluster.address, force=True, progress_stream=devnull())
    message = str(refused.value)
    assert "refuses to grade" in message
    assert "exercises" in message and "0123456789abcdef" in message
    assert gradebook_students(course) == []  # refused before anything was graded


def test_grade_without_a_reachable_scheduler_says_so(class_of_50, tmp_path, monkeypatch,
                                                     capsys):
    import sdpa_course.grading.dask_executor as dask_executor

    monkeypatch.setattr(dask_executor, "CONNECT_SECONDS", 1.0)
    course = copy_course(class_of_50[0], tmp_path / "course")
    with unused_address() as (host, port):
        address = f"tcp://{host}:{port}"
        status = main(["grade", "--course-dir", str(course), "--scheduler", address])
    assert status == 2
    assert f"cannot reach the Dask scheduler at {address}" in capsys.readouterr().err


def test_a_lost_scheduler_stops_the_run_and_a_rerun_grades_the_rest(tmp_path):
    course = released_course(tmp_path / "course")
    corpus = [c for c in cases() if c.name not in SLOW_CASES][:10]
    students = build_class(course, corpus)
    first = start_cluster(tmp_path / "first", workers=1)
    killer = threading.Thread(target=lambda: wait_until(
        lambda: len(recorded(course)) >= 3, timeout=120) and first.kill_scheduler(), daemon=True)
    killer.start()
    try:
        with pytest.raises(KitError) as stopped:
            grade_course(course, scheduler=first.address, progress_stream=devnull())
    finally:
        killer.join(timeout=30)
        first.stop()
    assert "went away" in str(stopped.value) and "rerun" in str(stopped.value)
    done = recorded(course)
    assert 3 <= len(done) < len(students)
    # consistent: every graded student recorded is in the gradebook, nobody else is
    assert gradebook_students(course) == sorted(done - {BROKEN})

    second = start_cluster(tmp_path / "second", workers=1)
    try:
        rerun = grade_course(course, scheduler=second.address, progress_stream=devnull())
    finally:
        second.stop()
    assert sorted(rerun.graded_now) == sorted(set(students) - done)
    assert gradebook_students(course) == sorted(set(students) - {BROKEN})

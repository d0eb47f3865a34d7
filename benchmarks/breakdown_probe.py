"""Run one `sdpa-course` command with a timer around each of its steps (for bench_breakdown.py).

    python benchmarks/breakdown_probe.py check NOTEBOOK
    python benchmarks/breakdown_probe.py grade COURSE_DIR [--workers N]

It runs the command's own code (`sdpa_course.cli.main`), as the console script does: the
steps are timed by wrappers put around the functions named in `STEPS` when their module is
first imported (an import hook), so that import times stay where the command pays them. Each
timed call, in this process and in the grading processes it forks, appends one JSON line to
the file named by SDPA_BENCH_TRACE: the step, the process, its wall and CPU time inclusive
and exclusive of the timed calls inside it, and its parent step. Lines with the step
"(process)" give a process's start (SDPA_BENCH_LAUNCH, a CLOCK_MONOTONIC time taken by the
parent before it started this interpreter) and its end.
"""

import time

STARTED = time.monotonic()  # before anything else: what precedes is the interpreter's start
STARTED_CPU = time.process_time()

import atexit  # noqa: E402 - after the clock, on purpose
import functools  # noqa: E402
import importlib.abc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

# module -> (attribute path, step name); wrapped right after the module first runs
STEPS = {
    "sdpa_course.cli": [("_check", "command: check"), ("_grade", "command: grade")],
    "autograder.check": [("check_path", "check_path")],
    "autograder.submission": [("read_submission", "reading the notebook")],
    "autograder.sandbox.pool": [
        ("SandboxPool.__init__", "sandbox pool: paths to hide"),
        ("SandboxPool._begin_launch", "zygote: launching it"),
        ("SandboxPool._finish_launch", "zygote: waiting for it"),
        ("SandboxPool.prefork", "worker: forked ahead (warm)"),
        ("SandboxPool.close", "sandbox pool: closing"),
    ],
    "autograder.sandbox.process": [
        ("WorkerProcess.__init__", "worker: fork and isolation"),
        ("WorkerProcess.exchange", "sandbox round trip"),
    ],
    "autograder.sandbox.sandbox": [
        ("Sandbox.start", "running the cells"),
        ("Sandbox.close", "closing the sandbox"),
    ],
    "autograder.skipping": [("split", "the cells grading runs (skipping)")],
    "autograder.runner": [("run_tests", "hidden suites")],
    "autograder.heatmap": [("causal_weights", "heatmap: reading the weights")],
    "autograder.diagnoses": [("diagnose_submission", "diagnoses")],
    "autograder.report": [("build_report", "report: building"),
                          ("render_text", "report: rendering as text")],
    "sdpa_course.engine_call": [("grade_path", "engine: one submission")],
    "sdpa_course.course.directory": [("Course.open", "opening the course (its config)")],
    "sdpa_course.grading.grade": [
        ("grade_course", "grade_course"),
        ("_recorded", "gradebook: who is recorded"),
        ("_GradingRun.finish", "record: saving the student's record"),
        ("after_grading", "after grading"),
        ("_print_summary", "printing the summary"),
    ],
    "sdpa_course.grading.workers": [
        ("WorkerPool.__enter__", "grading processes: starting"),
        ("WorkerPool.poll", "waiting for the grading processes"),
        ("WorkerPool.close", "grading processes: stopping"),
    ],
    "sdpa_course.grading.recording": [
        ("SubmissionRecorder.__init__", "recorder set-up (nbgrader steps)"),
        ("SubmissionRecorder.prepare", "prepare: nbgrader's sanitising"),
        ("SubmissionRecorder.record", "record: nbgrader's autograde steps"),
    ],
    "sdpa_course.grading.feedback": [
        ("feedback_exporter", "feedback exporter set-up"),
        ("FeedbackWriter.write", "feedback page"),
        ("refresh_feedback", "feedback: refresh for hand marks"),
    ],
    "sdpa_course.grading.hand_marks": [("class_marks", "gradebook: hand marks")],
    "sdpa_course.reports.class_report": [
        ("write_class_report", "class report"),
    ],
    "sdpa_course.reports.charts": [
        ("score_histograms", "class report: scores picture"),
        ("diagnosis_chart", "class report: diagnoses picture"),
    ],
    "nbgrader.api": [("Gradebook.__init__", "gradebook: opening a connection")],
}

TRACE = os.environ.get("SDPA_BENCH_TRACE", os.devnull)
_local = threading.local()


def _emit(event: dict) -> None:
    event["pid"] = os.getpid()
    with open(TRACE, "a") as trace:  # one short write per line: O_APPEND keeps lines whole
        trace.write(json.dumps(event) + "\n")


def _timed(function, step: str):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        stack = getattr(_local, "stack", None)
        if stack is None or getattr(_local, "pid", 0) != os.getpid():
            stack = _local.stack = []  # a forked process starts with no open step
            _local.pid = os.getpid()
        parent = stack[-1][0] if stack else ""
        stack.append([step, 0.0, 0.0])
        wall, cpu = time.monotonic(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            wall, cpu = time.monotonic() - wall, time.process_time() - cpu
            _, inner_wall, inner_cpu = stack.pop()
            if stack:
                stack[-1][1] += wall
                stack[-1][2] += cpu
            event = {"step": step, "parent": parent, "wall": wall, "cpu": cpu,
                     "own_wall": wall - inner_wall, "own_cpu": cpu - inner_cpu,
                     "end": time.monotonic()}
            boot = getattr(args[0], "boot_seconds", None) if args else None
            if step == "zygote: waiting for it" and boot:
                event["boot"] = boot  # the zygote's own steps, as it reported them
            if step == "closing the sandbox" and args:
                event["student_cpu"] = getattr(args[0], "cpu_seconds", 0.0)  # its workers'
            _emit(event)

    return timed


def _wrap(module, attribute: str, step: str) -> None:
    owner = module
    *path, name = attribute.split(".")
    for part in path:
        owner = getattr(owner, part, None)
    original = getattr(owner, name, None) if owner is not None else None
    if original is None:  # renamed or gone: say so, time the rest
        _emit({"step": "(missing)", "name": f"{module.__name__}.{attribute}"})
        return
    setattr(owner, name, _timed(original, step))


class _WrapAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds nothing itself: for a module of STEPS, wraps the real loader's exec_module."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in STEPS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                loader = spec.loader
                original = loader.exec_module

                def exec_module(module, original=original):
                    original(module)
                    for attribute, step in STEPS[module.__name__]:
                        _wrap(module, attribute, step)

                loader.exec_module = exec_module
                return spec
        return None


def _end() -> None:
    _emit({"step": "(process)", "launched": float(os.environ.get("SDPA_BENCH_LAUNCH", 0)),
           "started": STARTED, "started_cpu": STARTED_CPU, "end": time.monotonic(),
           "cpu": time.process_time()})


def main() -> int:
    sys.meta_path.insert(0, _WrapAfterImport())
    atexit.register(_end)
    command, target, *rest = sys.argv[1:]
    import_started, import_cpu = time.monotonic(), time.process_time()
    import sdpa_course.cli as cli

    _emit({"step": "imports: the command line", "parent": "", "own_wall":
           time.monotonic() - import_started, "own_cpu": time.process_time() - import_cpu,
           "end": time.monotonic()})
    if command == "check":
        argv = ["check", target]
    else:
        argv = ["grade", "--course-dir", target, *rest]
    sys.argv = ["sdpa-course", *argv]
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the report is not what is measured
    if hasattr(cli, "run"):
        cli.run()  # the console script's own entry point: it exits
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())

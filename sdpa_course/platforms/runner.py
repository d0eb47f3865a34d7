"""Grading one submission inside a platform's container: what both platforms' graders share.

A platform (Gradescope, PrairieLearn) starts one container per submission and runs the
grader the kit wrote into it (`gradescope`, `prairielearn`). The grader reads its
configuration (`GraderConfig`: the course seed, the isolation the instructor chose), finds
the submission, grades it as the student it names with the engine (`engine_call`), and turns
the report into the platform's results: `Graded` (the report and how it was isolated) or
`Ungradeable` (a reason a student can act on). Nothing a submission holds raises out of here.

Isolation. The sandbox's layers (namespaces, Landlock, seccomp: `autograder.sandbox`) are
asked for first. Where the container refuses them (Docker's default seccomp profile forbids
new user namespaces), the grader refuses, naming the layer, unless the instructor built it
with `--isolation container`: then the code runs in the sandbox's unisolated mode, the
container being the submission's only wall, and the results say so (`CONTAINER_NOTE`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from autograder.exercises import EXERCISES, exercise_label
from autograder.sandbox import IsolationUnavailable, SandboxPool
from autograder.terminal import one_line
from autograder.variants import variant_for
from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK
from sdpa_course.engine_call import ISOLATED, UNSAFE, grade_path
from sdpa_course.errors import GradingFailed
from sdpa_course.reports.feedback_text import diagnosis_line

CONFIG_NAME = "sdpa_grader.json"  # beside the grader, in the platform's staff-only files
SANDBOX = "sandbox"  # the kit's layers or a refusal (the default)
CONTAINER = "container"  # where the layers are refused: the platform's container alone
ISOLATION_CHOICES = (SANDBOX, CONTAINER)
CONTAINER_NOTE = ("Isolation: container mode (chosen by the instructor: each submission has a "
                  "container of its own). This container refused the kit's sandbox ({reason}), "
                  "so the code ran with the container as its only wall.")
REFUSED = ("The autograder did not run your code: the grading container refuses the kit's "
           "sandbox ({reason}). Nothing was graded; please tell your instructor. (Instructor: "
           "rebuild the autograder with `--isolation container` to grade with the container as "
           "the submission's only wall, or use a container that allows user namespaces.)")
SUFFIXES = (".ipynb", ".py")


@dataclass(frozen=True)
class GraderConfig:
    """What the instructor's build put beside the grader: never shown to a student."""

    seed: str  # the course seed ("" for the lesson's numbers): staff-only, like the zip
    isolation: str = SANDBOX
    platform: str = ""

    def to_json(self) -> str:
        return json.dumps({"seed": self.seed, "isolation": self.isolation,
                           "platform": self.platform, "assignment": ASSIGNMENT}, indent=2)

    @classmethod
    def read(cls, path: Path) -> GraderConfig:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        isolation = data.get("isolation", SANDBOX)
        if isolation not in ISOLATION_CHOICES:
            raise ValueError(f"{path}: isolation must be one of {ISOLATION_CHOICES}")
        return cls(seed=str(data.get("seed") or ""), isolation=isolation,
                   platform=str(data.get("platform") or ""))


@dataclass(frozen=True)
class Test:
    """One hidden test as a platform shows it."""

    exercise: str
    name: str  # `Exercise 3: attention_weights_with_causal_mask`
    score: float
    max_score: float
    passed: bool
    output: str  # the kit's message, then the exercise's diagnoses with their lesson section
    extra_credit: bool


@dataclass
class Graded:
    report: dict
    isolation: str  # SANDBOX or CONTAINER: how it ran
    notes: list[str] = field(default_factory=list)  # for the student: the isolation used...

    @property
    def tests(self) -> list[Test]:
        return report_tests(self.report)

    @property
    def score(self) -> float:
        return float(self.report["score"])

    @property
    def extra_credit(self) -> float:
        return float(self.report.get("extra_credit") or 0.0)

    @property
    def max_score(self) -> float:
        return float(self.report["max_score"])

    @property
    def summary(self) -> str:
        """The text shown above the tests: score, whose numbers, and every warning."""
        lines = [f"Score: {_points(self.score)} / {_points(self.max_score)}"
                 + (f", plus {_points(self.extra_credit)} of extra credit (Exercise 4)"
                    if self.extra_credit else ""),
                 f"Graded as {self.report['variant'].get('label', 'default')} "
                 f"(student {self.report['variant'].get('student')})."]
        lines += self.notes
        lines += [f"Note: {warning}" for warning in self.report.get("warnings", [])]
        lines += [f"Cell {cell['cell']}: {cell['status']} {cell.get('error') or ''}".rstrip()
                  for cell in self.report.get("cells", [])]
        return "\n".join(lines)


@dataclass
class Ungradeable:
    reason: str  # for the student: what to fix, or that the grader refused


def _points(value: float) -> str:
    return f"{float(value):g}"


def report_tests(report: dict) -> list[Test]:
    """Every hidden test of the report, in the exercises' order, extra credit marked."""
    tests = []
    for key, exercise in report["exercises"].items():
        extra = bool(exercise.get("extra_credit")) or (key in EXERCISES
                                                       and EXERCISES[key].extra_credit)
        diagnoses = [f"Diagnosis: {diagnosis_line(code, key)}"
                     for code in exercise.get("diagnoses", [])]
        for test in exercise["tests"]:
            lines = [test.get("message") or ("Passed." if test["passed"] else "Failed.")]
            if not test["passed"]:
                lines += diagnoses
            tests.append(Test(key, f"{exercise_label(key)}: {test['name']}",
                              float(test["score"]), float(test["max_score"]),
                              bool(test["passed"]), "\n".join(lines), extra))
    return tests


def _own_file(path: Path, folder: Path) -> bool:
    """A regular file of the submission itself: not a link (a repository can hold one, to
    the grader's own files), nothing outside `folder`."""
    try:
        return (path.is_file() and not path.is_symlink()
                and path.resolve().is_relative_to(folder.resolve()))
    except (OSError, RuntimeError):  # a loop of links, a name the system refuses
        return False


def find_submission(folder: Path) -> Path | None:
    """The notebook (or `.py` file) in `folder`: `attention.ipynb` first, then the only one."""
    folder = Path(folder)
    for name in (f"{NOTEBOOK}.ipynb", f"{NOTEBOOK}.py"):
        if _own_file(folder / name, folder):
            return folder / name
    try:
        found = sorted(p for p in folder.rglob("*") if p.suffix in SUFFIXES
                       and not any(part.startswith(".") for part in p.relative_to(folder).parts)
                       and _own_file(p, folder))
    except OSError:
        return None
    notebooks = [p for p in found if p.suffix == ".ipynb"]
    return (notebooks or found or [None])[0]


def grade(path: Path | None, student: str, config: GraderConfig, *,
          staff_only: tuple[Path, ...] = ()) -> Graded | Ungradeable:
    """Grade `path` as `student` of the course whose seed `config` carries. `staff_only`:
    the folders holding the seed, hidden from student code (as the kit's files are)."""
    if path is None:
        return Ungradeable(f"No notebook ({NOTEBOOK}.ipynb) or Python file ({NOTEBOOK}.py) "
                           "was submitted: upload the notebook you worked in.")
    if not student.strip():
        return Ungradeable("The platform gave no student id to grade this submission as, so "
                           "your numbers are unknown; please tell your instructor.")
    variant = variant_for(config.seed or None, ASSIGNMENT, student)
    pool = SandboxPool(isolation=ISOLATED, hidden_paths=staff_only)
    isolation, notes = SANDBOX, []
    try:
        try:
            pool.start()
        except IsolationUnavailable as refused:
            pool.close()
            if config.isolation != CONTAINER:
                return Ungradeable(REFUSED.format(reason=refused.reason))
            pool, isolation = SandboxPool(isolation=UNSAFE, hidden_paths=staff_only), CONTAINER
            notes.append(CONTAINER_NOTE.format(reason=refused.reason))
        try:
            report = grade_path(path, pool=pool, variant=variant)
        except GradingFailed as failed:
            return Ungradeable(f"Your submission could not be graded: {one_line(str(failed))}")
    finally:
        pool.close()
    return Graded(report, isolation, notes)


def metadata_json(path: Path) -> object:
    """A platform's JSON file, or None when it is missing or not JSON."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def write_results(path: Path, results: dict) -> None:
    """Write `results` as the platform reads them, atomically (a half-written file is none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(partial, path)

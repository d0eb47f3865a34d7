"""`sdpa-course`: a thin command line over plain functions.

Each subcommand parses its arguments and calls one function; the functions are the real API
and what the tests call. This module is the top of the kit: it may import every package of
`sdpa_course` and `autograder.check`, and nothing imports it.

Start-up is time people wait for (`benchmarks/bench_breakdown.py` shows where it goes):

- each subcommand imports its module only when it runs: nbgrader alone takes most of a
  second to import, which `sdpa-course check` and `--help` do without;
- bad input is answered before any of that (`_argument_problem`): an unknown option, a
  course directory that is not one, an empty student id, an answer key's missing folder are
  said at once, with the subcommand's own usage, and nothing is created for them;
- `grade` starts the sandbox's zygote (half a second of numpy and matplotlib) before it
  imports nbgrader, on the other processor; `check` starts it before numpy;
- imports run with the garbage collector paused and without rfc3987_syntax's grammar
  (`deferred_imports`);
- the console script (`run`) exits without tearing the interpreter's heap down.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import tempfile
import threading
from pathlib import Path

from autograder.check import check_path  # light: it imports the engine once it runs
from autograder.sandbox.private import UnsafeFolder, temporary_base  # stdlib only
from autograder.terminal import one_line
from sdpa_course.assignment import COURSE_CONFIG, NO_TEXT_SOURCE, NOT_A_COURSE, TEXT_SOURCE
from sdpa_course.deferred_imports import collector_paused, defer_iri_grammar
from sdpa_course.errors import KitError


def _demo(args: argparse.Namespace) -> int:
    from sdpa_course.demo import run_demo  # deferred: start-up time

    return run_demo(workdir=args.dir, workers=args.workers)


def _init(args: argparse.Namespace) -> int:
    from sdpa_course.course.create import init_course  # deferred: start-up time

    path = init_course(Path(args.dir), force=args.force)
    print(f"Created an nbgrader course directory at {path}")
    print(f"Next: cd {path} && sdpa-course release")
    return 0


def _release(args: argparse.Namespace) -> int:
    from sdpa_course.course.directory import Course  # deferred: start-up time
    from sdpa_course.course.release import release_assignment  # deferred: start-up time
    from sdpa_course.nbgrader_ext.variants import how_to_add_a_seed  # deferred: start-up time

    out = release_assignment(Path(args.course_dir))
    print(f"Released the assignment for students: {out}")
    if not Course.open(Path(args.course_dir)).variants.has_seed:
        print(f"Note: {how_to_add_a_seed()}")
    return 0


def _build(args: argparse.Namespace) -> int:
    from sdpa_course.course.notebooks import build_notebooks  # deferred: start-up time

    for path in build_notebooks(Path(args.root)):
        print(f"wrote {path}")
    return 0


def _grade(args: argparse.Namespace) -> int:
    from autograder.sandbox import SandboxPool  # deferred: start-up time

    isolation = "unsafe-none" if args.unsafe_no_isolation else "namespaces"
    sandbox = None if args.scheduler else SandboxPool(isolation=isolation)
    if sandbox is not None:
        sandbox.start(wait=False)  # the zygote boots while nbgrader is imported
    try:
        with collector_paused():
            from sdpa_course.grading.grade import grade_class  # deferred: start-up time

        return grade_class(Path(args.course_dir), workers=args.workers, force=args.force,
                           as_json=args.json, scheduler=args.scheduler, isolation=isolation,
                           sandbox=sandbox)
    finally:
        if sandbox is not None:
            sandbox.close()


def _feedback(args: argparse.Namespace) -> int:
    with collector_paused():
        from sdpa_course.grading.grade import feedback_class  # deferred: start-up time

    return feedback_class(Path(args.course_dir), force=args.force)


def _student_id(typed: str | None) -> str | None:
    """A student id from the command line as `grade` names that folder: bytes that are not
    UTF-8 (a folder's name, tab-completed) shown as `\\xNN` (`submissions.escaped_name`)."""
    return None if typed is None else os.fsencode(typed).decode("utf-8", "backslashreplace")


def _check(args: argparse.Namespace) -> int:
    args.student = _student_id(args.student)
    variant = None
    if args.student and args.course:
        from sdpa_course.course.directory import Course  # deferred: start-up time (nbgrader)

        course = Course.open(Path(args.course))
        variant = course.variants.variant(args.student, course.assignment)
    elif args.student:
        from autograder.variants import public_variant  # deferred: start-up time
        from sdpa_course.assignment import ASSIGNMENT  # deferred: start-up time
        from sdpa_course.nbgrader_ext.variants import notebook_numbers_key  # deferred: nbgrader

        key = notebook_numbers_key(Path(args.path))
        if not key and not Path(args.path).is_file():
            return check_path(Path(args.path), as_json=args.json)  # it says what is missing
        if not key:
            raise KitError(f"{args.path} carries no course key (a notebook released by a "
                           "course with a seed does): its numbers are the lesson's, check it "
                           "without --student")
        variant = public_variant(key, ASSIGNMENT, args.student)
    return check_path(Path(args.path), as_json=args.json, variant=variant)


def _variant(args: argparse.Namespace) -> int:
    from sdpa_course.course.variants import show_variant  # deferred: start-up time

    answer_key = Path(args.answer_key) if args.answer_key else None
    print(show_variant(Path(args.course_dir), _student_id(args.student), as_json=args.json,
                       answer_key=answer_key))
    return 0


def _not_a_course(folder: str | Path) -> str | None:
    """Why `folder` is not a course directory, told without importing nbgrader; or None."""
    if (Path(folder) / COURSE_CONFIG).is_file():
        return None
    return NOT_A_COURSE.format(root=Path(folder).resolve())


def _argument_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments that needs none of the kit's heavy modules to see: it
    is said at once, with the subcommand's usage, and nothing is made for a bad path."""
    if args.command == "variant" and not _student_id(args.student).strip():
        return ("a student id is needed, as in submitted/<student>/ (an empty id would show "
                "the lesson's own numbers)")
    if args.command == "build" and not (Path(args.root) / TEXT_SOURCE).is_file():
        return NO_TEXT_SOURCE.format(path=Path(args.root) / TEXT_SOURCE)
    if args.command in ("release", "grade", "feedback", "variant", "autograder"):
        if problem := _not_a_course(args.course_dir):
            return problem
    if args.command == "check":
        student = _student_id(args.student)
        if student is not None and not student.strip():
            return ("--student needs the student's id (without it, the lesson's numbers are "
                    "checked)")
        if args.course and not student:
            return "--course needs --student: the id of the student to grade as"
        if args.course and (problem := _not_a_course(args.course)):
            return problem
        if not Path(args.path).exists():
            return f"{args.path}: no such file"
    if args.command == "variant" and args.answer_key:
        if not Path(args.answer_key).parent.is_dir():
            return (f"cannot write the answer key to {args.answer_key}: its folder "
                    f"{Path(args.answer_key).parent} does not exist")
    return None


def _autograder(args: argparse.Namespace) -> int:
    if args.platform == "gradescope":
        from sdpa_course.platforms.gradescope import build  # deferred: start-up time

        out = build(Path(args.course_dir), Path(args.out or "autograder.zip"),
                    isolation=args.isolation)
        print(f"Wrote the Gradescope autograder {out}: upload it as the assignment's "
              "autograder (its README.md says the rest)")
    else:
        from sdpa_course.platforms.prairielearn import build  # deferred: start-up time

        out = build(Path(args.course_dir), Path(args.out or "prairielearn"),
                    isolation=args.isolation, image=args.image)
        print(f"Wrote the PrairieLearn question and its grader's image to {out} "
              "(its README.md says what to do next)")
    return 0


def _positive(text: str) -> int:
    """A count of processes: 0 or fewer would quietly mean something else (all cores, one)."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {text!r}")
    return count


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sdpa-course",
        description="Course kit for scaled dot-product attention: release, grade and check.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="run the whole instructor round trip on a throwaway course")
    p.add_argument("--dir", type=Path, default=None,
                   help="where to build the demo course (default: a new temporary folder)")
    p.add_argument("--workers", type=_positive, default=None,
                   help="grading processes (default: cores)")
    p.set_defaults(func=_demo)

    p = sub.add_parser("init", help="create a ready nbgrader course directory")
    p.add_argument("dir", help="the folder to create")
    p.add_argument("--force", action="store_true", help="write into an existing non-empty folder")
    p.set_defaults(func=_init)

    p = sub.add_parser("release", help="build release/<assignment>/ for students")
    p.add_argument("--course-dir", default=".", help="the course directory (default: here)")
    p.set_defaults(func=_release)

    p = sub.add_parser("build", help="rebuild the generated notebooks from their text sources")
    p.add_argument("--root", default=".", help="the kit's checkout (default: here)")
    p.set_defaults(func=_build)

    p = sub.add_parser("grade", help="grade every submission under submitted/")
    p.add_argument("--course-dir", default=".", help="the course directory (default: here)")
    p.add_argument("--workers", type=_positive, default=None,
                   help="grading processes (default: cores)")
    p.add_argument("--force", action="store_true", help="regrade students already recorded")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="grade on the workers of this Dask scheduler (e.g. tcp://host:8786) "
                        "instead of local processes (--workers is then ignored)")
    p.add_argument("--json", action="store_true", help="print the class result as JSON")
    p.add_argument("--unsafe-no-isolation", action="store_true",
                   help="where this machine refuses the sandbox's isolation (user namespaces), "
                        "run student code without it, as you: it can read and change your "
                        "files and reach the network. Recorded in every report")
    p.set_defaults(func=_grade)

    p = sub.add_parser("feedback", help="regenerate feedback after hand grading in formgrader")
    p.add_argument("--course-dir", default=".", help="the course directory (default: here)")
    p.add_argument("--force", action="store_true",
                   help="regenerate every graded student's page, not only those whose hand "
                        "marks or comments changed")
    p.set_defaults(func=_feedback)

    p = sub.add_parser("check", help="grade one submission (.ipynb or .py) locally")
    p.add_argument("path", help="the notebook or Python file to check")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--student", metavar="ID", default=None,
                   help="grade as this student: their own numbers, from the notebook's "
                        "course key (default: the lesson's numbers)")
    p.add_argument("--course", metavar="DIR", default=None,
                   help="with --student: the course directory whose seed gives the student's "
                        "numbers and hidden inputs (for instructors)")
    p.set_defaults(func=_check)

    p = sub.add_parser("autograder", help="build an autograder for Gradescope or PrairieLearn")
    p.add_argument("platform", choices=("gradescope", "prairielearn"),
                   help="gradescope: the autograder zip; prairielearn: a question folder "
                        "with its external grader")
    p.add_argument("--course-dir", default=".", help="the course directory (default: here)")
    p.add_argument("--out", metavar="PATH", default=None,
                   help="where to write it (default: autograder.zip for gradescope, the "
                        "folder prairielearn for prairielearn)")
    p.add_argument("--isolation", choices=("sandbox", "container"), default="sandbox",
                   help="sandbox (default): student code runs in the kit's sandbox, and a "
                        "container that refuses it refuses to grade, naming the missing "
                        "layer; container: where the platform's container refuses the "
                        "sandbox, rely on it alone (each submission has a container of its "
                        "own), said in every result")
    p.add_argument("--image", default="YOUR_DOCKERHUB_NAME/sdpa-course-grader",
                   help="prairielearn: the grader image's name on Docker Hub, written into "
                        "info.json (you build and push it from grader-image/)")
    p.set_defaults(func=_autograder)

    p = sub.add_parser("variant", help="a student's own numbers and expected answers")
    p.add_argument("student", help="the student id, as in submitted/<student>/")
    p.add_argument("--course-dir", default=".", help="the course directory (default: here)")
    p.add_argument("--json", action="store_true", help="print them as JSON")
    p.add_argument("--answer-key", metavar="PATH", default=None,
                   help="also write the student's answer key (a notebook) to PATH")
    p.set_defaults(func=_variant)
    return parser


def _usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    """argparse's own form of an error (usage, then the message), each line escaped: a path
    or a student id typed on the command line may hold terminal escapes."""
    parser.print_usage(sys.stderr)
    shown = "\n".join(one_line(line) for line in message.split("\n"))
    print(f"{parser.prog}: error: {shown}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    # the subcommand's usage, not the top level's: argparse's own unknown-option error
    # would show `sdpa-course COMMAND ...`
    command = parser._subparsers._group_actions[0].choices[args.command]
    if unknown:
        return _usage_error(command, f"unrecognized arguments: {' '.join(unknown)}")
    if problem := _argument_problem(args):
        return _usage_error(command, problem)
    defer_iri_grammar()  # before any command imports nbformat: a second saved
    # the kit's temporary folders only where nobody else can rename them (a student's TMPDIR
    # kept by `sudo -E`): /tmp otherwise
    tempfile.tempdir = temporary_base(tempfile.gettempdir())
    try:
        return args.func(args)
    except KitError as err:  # may quote a student's id or file name: each line escaped
        shown = "\n".join(one_line(line) for line in str(err).split("\n"))
        print(f"sdpa-course {args.command}: {shown}", file=sys.stderr)
        return 2
    except UnsafeFolder as err:  # a cache folder that is a link or another user's
        print(f"sdpa-course {args.command}: refusing: {one_line(err)}", file=sys.stderr)
        return 2
    except NotImplementedError as err:
        print(f"sdpa-course {args.command}: not implemented yet ({err})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"sdpa-course {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `sdpa-course check x --json | head`: the reader left; that is not an error.
        # Point stdout at devnull so the interpreter's final flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def run() -> None:
    """The `sdpa-course` console script: `main`, then an exit that skips tearing down the
    interpreter's heap.

    Freeing the objects of nbgrader, nbconvert, SQLAlchemy, numpy and matplotlib one by one
    takes up to a second after `grade` has finished, and a tenth of one after `check`. The
    atexit handlers still run (cgroups and temporary folders removed, worker processes
    stopped) and the standard streams are flushed; while another thread runs, the ordinary
    exit waits for it.
    """
    status = main()
    if threading.active_count() > 1:
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing left to say
            pass
    os._exit(status)


if __name__ == "__main__":
    run()

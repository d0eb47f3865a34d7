"""`sdpa-course`: a thin command line over plain functions.

Each subcommand parses its arguments and calls one function; the functions are the real API
and what the tests call. This module is the top of the kit: it may import every package of
`sdpa_course` and `autograder.check`, and nothing imports it.

Each subcommand imports its module only when it runs (deferred for start-up time): nbgrader
alone takes 2-3 s to import, which `sdpa-course check` and `--help` do without.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autograder.check import check_path  # light: it imports the engine once it runs
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
    from sdpa_course.course.release import release_assignment  # deferred: start-up time

    out = release_assignment(Path(args.course_dir))
    print(f"Released the assignment for students: {out}")
    return 0


def _build(args: argparse.Namespace) -> int:
    from sdpa_course.course.notebooks import build_notebooks  # deferred: start-up time

    for path in build_notebooks(Path(args.root)):
        print(f"wrote {path}")
    return 0


def _grade(args: argparse.Namespace) -> int:
    from sdpa_course.grading.grade import grade_class  # deferred: start-up time

    return grade_class(
        Path(args.course_dir), workers=args.workers, force=args.force, as_json=args.json,
        scheduler=args.scheduler,
    )


def _check(args: argparse.Namespace) -> int:
    return check_path(Path(args.path), as_json=args.json)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sdpa-course",
        description="Course kit for scaled dot-product attention: release, grade and check.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="run the whole instructor round trip on a throwaway course")
    p.add_argument("--dir", type=Path, default=None,
                   help="where to build the demo course (default: a new temporary folder)")
    p.add_argument("--workers", type=int, default=None, help="grading processes (default: cores)")
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
    p.add_argument("--workers", type=int, default=None, help="grading processes (default: cores)")
    p.add_argument("--force", action="store_true", help="regrade students already recorded")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="grade on the workers of this Dask scheduler (e.g. tcp://host:8786) "
                        "instead of local processes (--workers is then ignored)")
    p.add_argument("--json", action="store_true", help="print the class result as JSON")
    p.set_defaults(func=_grade)

    p = sub.add_parser("check", help="grade one submission (.ipynb or .py) locally")
    p.add_argument("path", help="the notebook or Python file to check")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KitError as err:
        print(f"sdpa-course {args.command}: {err}", file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main())

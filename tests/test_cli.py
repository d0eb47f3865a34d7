import subprocess
import sys

from sdpa_course.cli import build_parser


def test_every_contract_command_is_a_subcommand():
    commands = build_parser()._subparsers._group_actions[0].choices
    assert {"demo", "init", "release", "grade", "check", "variant"} <= set(commands)


def test_console_script_is_installed_and_answers_help():
    done = subprocess.run(
        [sys.executable, "-m", "sdpa_course.cli", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0
    assert "sdpa-course" in done.stdout


def test_feedback_is_a_subcommand_that_says_when_nothing_is_graded(tmp_path):
    from grade_course_factory import released_course

    commands = build_parser()._subparsers._group_actions[0].choices
    assert "feedback" in commands
    course = released_course(tmp_path / "course")
    done = subprocess.run(
        [sys.executable, "-m", "sdpa_course.cli", "feedback", "--course-dir", str(course)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 2
    assert "no student graded yet" in done.stderr and "sdpa-course grade" in done.stderr

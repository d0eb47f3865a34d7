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

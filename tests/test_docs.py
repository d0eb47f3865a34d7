"""The docs match the code: the README's two commands, CI, and the copied contract."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]


def test_quick_start_is_exactly_two_commands_the_makefile_defines():
    commands = _quick_start_commands()
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    for command in commands:
        assert re.search(rf"^{command.split()[1]}:", makefile, re.M), command


def test_ci_runs_the_readme_test_command_verbatim():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert _quick_start_commands()[1] in ci_lines


def test_contract_copy_matches_the_shared_contract():
    shared = ROOT.parent / "shared" / "CONTRACT.md"
    if not shared.exists():
        pytest.skip("no shared/CONTRACT.md beside this checkout to compare with")
    copy = (ROOT / "docs" / "CONTRACT.md").read_text().split("\n", 1)[1]
    assert copy == shared.read_text()

"""The docs match the code: the README's two commands, CI, the copied contract, and the
contract's diagnosis codes (CONTRACT section 3), which the engine must keep, never renamed, and
the sandbox's limits with their defaults."""

import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from autograder.diagnoses.codes import CODES
from autograder.sandbox import Limits

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


def _recipe(makefile: str, target: str) -> list[str]:
    """The command lines of `target`'s recipe in the Makefile."""
    body = re.search(rf"^{target}:.*\n((?:\t.*\n)*)", makefile, re.M)
    assert body, target
    return [line.strip() for line in body.group(1).splitlines()]


def test_make_test_and_make_test_slow_split_the_suite_and_ci_runs_both():
    """`make test` runs every test not marked slow, `make test-slow` the slow ones; CI runs
    both, the slow part after the README's command and under the same environment."""
    makefile = (ROOT / "Makefile").read_text()
    quick, slow = _recipe(makefile, "test"), _recipe(makefile, "test-slow")
    assert "-m pytest " in quick[-1] and quick[-1].endswith('-m "not slow"'), quick
    assert "-m pytest " in slow[-1] and slow[-1].endswith("-m slow"), slow
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert ci_lines.index("make test") < ci_lines.index("make test-slow")
    assert re.search(r"^test-all: test test-slow$", makefile, re.M)


def test_contract_copy_matches_the_shared_contract():
    shared = ROOT.parent / "shared" / "CONTRACT.md"
    if not shared.exists():
        pytest.skip("no shared/CONTRACT.md beside this checkout to compare with")
    copy = (ROOT / "docs" / "CONTRACT.md").read_text().split("\n", 1)[1]
    assert copy == shared.read_text()


# CONTRACT section 3 as first agreed. The contract may gain codes; none of these may be
# renamed or dropped, in the contract or in the engine.
AGREED_CODES = (
    "no-scaling", "wrong-scale", "not-normalized", "softmax-axis", "unstable-softmax",
    "wrong-key", "wrong-gradient", "mask-ignored", "mask-inverted", "mask-after-softmax",
    "mask-zero-fill", "mask-none-broken", "transposed", "wrong-shape", "returns-swapped",
    "mutates-input", "causal-diagonal", "causal-wrong-triangle", "missing-name",
    "syntax-error", "crashed", "timeout", "memory-limit", "forbidden-import",
)


def _table_codes(document: str) -> list[str]:
    """The codes in the first column of the table of `document`'s section 3."""
    text = (ROOT / "docs" / document).read_text()
    section = text.split("\n## 3. Diagnosis codes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert rows[0].replace(" ", "") == "|code|where|meaning|", rows[0]
    codes = []
    for row in rows[2:]:  # after the header and its |---| line
        cell = row.split("|")[1].strip()
        assert cell.startswith("`") and cell.endswith("`"), row
        codes.append(cell.strip("`"))
    return codes


def contract_codes() -> list[str]:
    """The codes of docs/CONTRACT.md section 3, then those docs/CONTRACT-ADDITIONS.md adds."""
    agreed = _table_codes("CONTRACT.md")
    return agreed + [code for code in _table_codes("CONTRACT-ADDITIONS.md")
                     if code not in agreed]


def test_the_additions_rename_no_code_of_the_contract():
    """A row of the additions either adds a code or widens one the contract has, by name."""
    added = _table_codes("CONTRACT-ADDITIONS.md")
    assert len(added) == len(set(added))
    assert set(_table_codes("CONTRACT.md")) <= set(contract_codes())


def test_the_contract_keeps_every_agreed_diagnosis_code():
    codes = contract_codes()
    assert len(codes) == len(set(codes))
    assert set(AGREED_CODES) <= set(codes), sorted(set(AGREED_CODES) - set(codes))


def test_the_engine_reports_every_contract_code_under_its_contract_name():
    missing = [code for code in contract_codes() if code not in CODES]
    assert not missing, f"in docs/CONTRACT.md section 3 but not autograder/diagnoses: {missing}"


def test_ci_requires_every_component_and_runs_make_test_with_it():
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "export SDPA_REQUIRE_ALL=1" in lines
    assert lines.index("export SDPA_REQUIRE_ALL=1") < lines.index("make test")


@pytest.mark.parametrize("require_all, status", [("", 0), ("1", 1)])
def test_the_system_package_script_fails_only_where_everything_is_required(
        tmp_path, require_all, status):
    # a machine without chromium and without apt-get: nothing can be installed
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ls", "id"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(bin_dir), "SDPA_REQUIRE_ALL": require_all}
    done = subprocess.run(["/bin/sh", str(ROOT / "tests" / "install_system_packages.sh")],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == status, done.stderr
    assert "chromium" in done.stderr
    assert ("SDPA_REQUIRE_ALL=1" in done.stderr) == (status == 1)


@pytest.mark.parametrize("apt_status", [0, 100])
def test_the_system_package_script_keeps_its_log_only_when_the_install_failed(
        tmp_path, apt_status):
    # root with an apt-get that succeeds or fails, on a machine that lacks chromium
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ls", "timeout", "rm"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    for tool, body in (("id", "echo 0"), ("apt-get", f"exit {apt_status}")):
        (bin_dir / tool).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": str(bin_dir), "SDPA_REQUIRE_ALL": "", "TMPDIR": str(tmp_path)}
    done = subprocess.run(["/bin/sh", str(ROOT / "tests" / "install_system_packages.sh")],
                          env=env, capture_output=True, text=True, timeout=60)
    log = tmp_path / "sdpa-test-apt.log"
    assert done.returncode == 0, done.stderr
    if apt_status == 0:
        assert "installed" in done.stdout and not log.exists()
    else:
        assert f"see {log}" in done.stderr and log.exists()


@pytest.mark.parametrize("require_all, outcome", [("", "skip"), ("1", "fail")])
def test_a_missing_component_skips_except_where_everything_is_required(
        monkeypatch, require_all, outcome):
    from required import unavailable

    monkeypatch.setenv("SDPA_REQUIRE_ALL", require_all)
    expected = pytest.skip.Exception if outcome == "skip" else pytest.fail.Exception
    with pytest.raises(expected, match="needs chromium"):
        unavailable("this test needs chromium")


@pytest.mark.parametrize("require_all, outcome", [("", "skip"), ("1", "fail")])
def test_a_broken_playwright_install_fails_where_everything_is_required(
        monkeypatch, require_all, outcome):
    import importlib

    monkeypatch.setenv("SDPA_REQUIRE_ALL", require_all)
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "e2e"))
    monkeypatch.setitem(sys.modules, "playwright", None)  # importing it raises ImportError
    monkeypatch.delitem(sys.modules, "playwright_api", raising=False)
    expected = pytest.skip.Exception if outcome == "skip" else pytest.fail.Exception
    with pytest.raises(expected, match="playwright"):
        importlib.import_module("playwright_api")


def test_the_readme_lists_every_sandbox_limit_with_its_default_and_meaning():
    section = (ROOT / "README.md").read_text().split("### Limits: per submission", 1)[1]
    table = section.split("\n\n- ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \| ([^|]+) \|$", table, re.M)
    listed = {name: (default.strip(), meaning.strip()) for name, default, meaning in rows}
    defaults, meanings = Limits(), Limits.help()
    assert listed == {f.name: (repr(getattr(defaults, f.name)), meanings[f.name])
                      for f in fields(Limits)}

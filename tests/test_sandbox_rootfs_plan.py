"""The private root's allowlist is read quickly and the same as importlib.metadata reads it:
every distribution the zygote's pre-import loaded a module from, and what those require."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys

import pytest

from autograder.sandbox import rootfs
from autograder.sandbox.blocker import FORBIDDEN_PACKAGES
from autograder.sandbox.zygote import ANSWER_DISTRIBUTIONS

FORBIDDEN = {"sdpa-course"}


def _slow_top_entries(dist) -> set[str]:
    """importlib.metadata's own reading: a path object per RECORD line."""
    site_dir = os.path.realpath(str(dist.locate_file("")))
    entries = set()
    for file in dist.files or ():
        parts = file.parts
        if not parts or parts[0] in ("..", "/"):
            continue
        relative = os.path.join(*parts) if parts[0] == "__pycache__" else parts[0]
        entries.add(os.path.join(site_dir, relative))
    return entries


def _existing(paths: set[str]) -> set[str]:
    return {path for path in paths if os.path.lexists(path)}


def _slow_requirements(dist) -> list[str]:
    names = []
    for requirement in dist.requires or ():
        found = rootfs._REQUIREMENT_NAME.match(requirement)
        if found and "extra ==" not in requirement.replace("extra==", "extra =="):
            names.append(found.group(1))
    return names


def test_each_installed_distribution_reads_the_same_as_importlib_reads_it():
    checked = 0
    for dist in importlib.metadata.distributions():
        if dist.read_text("RECORD") is None:
            continue
        # Existing entries only, as the plan keeps them: once anything has imported the
        # importlib_metadata backport, its finder replaces the standard library's and its
        # `files` leaves out listed files that are missing (setuptools' vendored wheel lists
        # a bin/wheel it never installed), so the oracle's reading depends on test order.
        assert (_existing(rootfs._top_entries(dist))
                == _existing(_slow_top_entries(dist))), dist.metadata["Name"]
        assert rootfs._requirements(dist) == _slow_requirements(dist), dist.metadata["Name"]
        checked += 1
    assert checked > 20  # numpy, matplotlib, nbgrader and their requirements at least


def _preloaded_modules() -> set[str]:
    """The modules the zygote's code and its pre-import load, in a fresh interpreter."""
    script = ("import sys, os\nos.environ['MPLBACKEND'] = 'Agg'\nbefore = set(sys.modules)\n"
              "from autograder.sandbox import zygote\n"
              "zygote.preload()\nprint('\\n'.join(sorted(set(sys.modules) - before)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    return set(done.stdout.split())


@pytest.fixture(scope="module")
def preloaded():
    names = _preloaded_modules()
    for name in names:  # importable here too: the same modules, for _module_locations
        if name.partition(".")[0] not in FORBIDDEN_PACKAGES:
            try:
                __import__(name)
            except ImportError:
                pass
    return names


def test_owners_found_by_name_are_those_every_distribution_names(preloaded):
    tops = {}
    stdlib = rootfs._stdlib_dirs()
    for location in rootfs._module_locations(preloaded):
        found = rootfs._top_level(location, rootfs._site_dirs(stdlib))
        if found and found[1].partition(".")[0] not in FORBIDDEN_PACKAGES:  # as `plan` does
            tops.setdefault(found[1].partition(".")[0], os.path.join(*found))
    assert "numpy" in tops and "matplotlib" not in tops  # imported by answers that need it
    installed = rootfs._Installed(FORBIDDEN)
    everyone = importlib.metadata.packages_distributions()
    slow = rootfs._Installed(FORBIDDEN).entries(
        [dist for name in tops for dist in everyone.get(name, [])])
    assert installed.entries(installed.owners(tops)) == slow
    assert all(path in slow for path in tops.values())  # every module's own folder is there


def test_the_plan_binds_matplotlib_and_what_it_needs_but_not_the_kit(preloaded):
    plan = rootfs.plan(preloaded, [], FORBIDDEN_PACKAGES, tuple(FORBIDDEN),
                       ANSWER_DISTRIBUTIONS)
    names = {os.path.basename(path) for path in plan.packages}
    assert {"numpy", "matplotlib", "PIL", "pyparsing", "kiwisolver"} <= names
    assert not names & {"sdpa_course", "autograder", "sdpa_ref", "nbgrader", "jsonschema"}


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_kits_own_distribution_is_never_bound_even_when_asked_for():
    # its dist-info lists the answer key's copy in a wheel install: what hiding it keeps out
    assert rootfs._Installed(set()).entries(["sdpa-course"])
    assert (rootfs._Installed(FORBIDDEN).entries(["sdpa-course", "numpy"])
            == rootfs._Installed(set()).entries(["numpy"]))


def test_the_kits_packages_are_never_bound_even_if_the_pre_import_loaded_them(
        preloaded, monkeypatch):
    # As in a wheel install, the kit's packages sit in a directory imports come from.
    monkeypatch.syspath_prepend(REPO)
    kit = {"autograder", "autograder.sandbox", "sdpa_ref", "sdpa_course"}
    for name in kit:  # imported for their locations, as the pre-import would
        importlib.import_module(name)
    plan = rootfs.plan(preloaded | kit, [], FORBIDDEN_PACKAGES, tuple(FORBIDDEN))
    assert REPO in plan.emptied  # the checkout is taken for a site directory, as intended
    bound = [path for path in plan.packages if os.path.dirname(path) == REPO]  # not .venv's
    assert bound == [], bound

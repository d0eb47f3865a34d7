"""The kit's installed files, which the sandbox hides, are read from its dist-info as
importlib.metadata reads them, without importing it (`pool._kit_record`): the same paths,
and importlib.metadata itself wherever the two readings could differ."""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import subprocess
import sys

import pytest

from autograder.sandbox import pool


@pytest.fixture
def path_finder_only(monkeypatch):
    """sys.meta_path without the distribution finders packages install (importlib_metadata,
    once some library imports it, puts its own there): as a `check` process has it."""
    monkeypatch.setattr(sys, "meta_path", [
        finder for finder in sys.meta_path
        if getattr(finder, "find_distributions", None) is None
        or finder is importlib.machinery.PathFinder])


def _by_metadata(monkeypatch) -> list[str]:
    with monkeypatch.context() as patched:
        patched.setattr(pool, "_kit_record", lambda: (_ for _ in ()).throw(pool._AskMetadata))
        return pool._installed_kit_paths()


def test_the_kits_files_are_those_importlib_metadata_lists(monkeypatch, path_finder_only):
    found = pool._kit_record()
    dist = importlib.metadata.distribution(pool.KIT_DISTRIBUTION)
    assert found is not None
    assert found[0] == dist.locate_file("")
    assert sorted(found[1]) == sorted(str(file) for file in dist.files)
    assert found[2] == dist.read_text("direct_url.json")
    assert pool._installed_kit_paths() == _by_metadata(monkeypatch)
    assert any(path.endswith(".dist-info") for path in pool._installed_kit_paths())


def _dist_info(folder, name: str, record: str):
    info = folder / name
    info.mkdir(parents=True)
    (info / "RECORD").write_text(record)
    return info


def test_the_first_path_entry_holding_the_kit_is_read_as_importlib_metadata_reads_it(
        tmp_path, monkeypatch, path_finder_only):
    site = tmp_path / "site"
    _dist_info(site, "SDPA.Course-9.dist-info",
               'sdpa_course/__init__.py,,\n"odd,name.py",sha256=x,3\n'
               "../bin/sdpa-course,,\nSDPA.Course-9.dist-info/RECORD,,\n")
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    where, files, direct_url = pool._kit_record()
    assert where == site and direct_url is None
    assert "odd,name.py" in files and "../bin/sdpa-course" in files
    assert pool._installed_kit_paths() == _by_metadata(monkeypatch)
    assert str(tmp_path / "bin" / "sdpa-course") in pool._installed_kit_paths()


@pytest.mark.parametrize("names", [
    ("sdpa_course-1.dist-info", "sdpa_course-2.dist-info"),  # which first: listdir's order
    ("sdpa_course-1.egg-info",),  # SOURCES.txt and its own rules
])
def test_where_the_readings_could_differ_importlib_metadata_is_asked(tmp_path, monkeypatch,
                                                                      names):
    site = tmp_path / "site"
    for name in names:
        _dist_info(site, name, "sdpa_course/__init__.py,,\n")
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    with pytest.raises(pool._AskMetadata):
        pool._kit_record()
    assert pool._installed_kit_paths() == _by_metadata(monkeypatch)


def test_an_empty_record_or_a_zip_on_the_path_is_left_to_importlib_metadata(tmp_path,
                                                                          monkeypatch):
    site = tmp_path / "site"
    _dist_info(site, "sdpa_course-1.dist-info", "")
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    with pytest.raises(pool._AskMetadata):
        pool._kit_record()
    archive = tmp_path / "packages.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip archive
    monkeypatch.setattr(sys, "path", [str(archive), *sys.path[1:]])
    with pytest.raises(pool._AskMetadata):
        pool._kit_record()


def test_check_finds_the_paths_to_hide_without_importing_importlib_metadata():
    script = ("import sys\nimport sdpa_course.cli\nfrom autograder.sandbox import SandboxPool\n"
              "SandboxPool()\nprint('importlib.metadata' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False"]


def test_another_finder_of_distributions_is_left_to_importlib_metadata(monkeypatch):
    class Finder:  # as importlib_metadata's MetadataPathFinder, once imported
        @staticmethod
        def find_spec(*args):
            return None

        @staticmethod
        def find_distributions(*args, **kwargs):
            return iter(())

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    with pytest.raises(pool._AskMetadata):
        pool._kit_record()
    assert pool._installed_kit_paths() == _by_metadata(monkeypatch)

"""The kit's installed files, which the sandbox hides, are read from its dist-info as
importlib.metadata reads them, without importing it (`pool._kit_record`): the same paths,
and importlib.metadata itself wherever the two readings could differ."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from autograder.sandbox import pool


def _by_metadata(monkeypatch) -> list[str]:
    with monkeypatch.context() as patched:
        patched.setattr(pool, "_kit_record", lambda: (_ for _ in ()).throw(pool._AskMetadata))
        return pool._installed_kit_paths()


# Both readings, in a fresh interpreter as `check` runs them: in this one some library may
# have imported importlib_metadata, which takes over path-based discovery from the standard
# library (its finder on sys.meta_path, PathFinder's deleted), and then the kit asks
# importlib.metadata itself (the last test).
FRESH_READINGS = """
import importlib.metadata, json, sys
from autograder.sandbox import pool
sys.path[:0] = json.loads(sys.argv[1])
found = pool._kit_record()
fast = pool._installed_kit_paths()
pool._kit_record = pool._kit_record_by_metadata
dist = importlib.metadata.distribution(pool.KIT_DISTRIBUTION)
print(json.dumps({"found": [str(found[0]), found[1], found[2]], "fast": fast,
                  "asked": pool._installed_kit_paths(),
                  "metadata": [str(dist.locate_file("")), [str(f) for f in dist.files],
                               dist.read_text("direct_url.json")]}))
"""


def _fresh_readings(*path_entries) -> dict:
    done = subprocess.run([sys.executable, "-c", FRESH_READINGS,
                           json.dumps([str(entry) for entry in path_entries])],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_the_kits_files_are_those_importlib_metadata_lists():
    readings = _fresh_readings()
    where, files, direct_url = readings["found"]
    assert where == readings["metadata"][0]
    assert sorted(files) == sorted(readings["metadata"][1])
    assert direct_url == readings["metadata"][2]
    assert readings["fast"] == readings["asked"]
    assert any(path.endswith(".dist-info") for path in readings["fast"])


def _dist_info(folder, name: str, record: str):
    info = folder / name
    info.mkdir(parents=True)
    (info / "RECORD").write_text(record)
    return info


def test_the_first_path_entry_holding_the_kit_is_read_as_importlib_metadata_reads_it(
        tmp_path):
    site = tmp_path / "site"
    _dist_info(site, "SDPA.Course-9.dist-info",
               'sdpa_course/__init__.py,,\n"odd,name.py",sha256=x,3\n'
               "../bin/sdpa-course,,\nSDPA.Course-9.dist-info/RECORD,,\n")
    readings = _fresh_readings(site)
    where, files, direct_url = readings["found"]
    assert where == str(site) and direct_url is None
    assert "odd,name.py" in files and "../bin/sdpa-course" in files
    assert readings["metadata"][0] == str(site)
    assert readings["fast"] == readings["asked"]
    assert str(tmp_path / "bin" / "sdpa-course") in readings["fast"]


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
    assert any(path.endswith(".dist-info") for path in pool._installed_kit_paths())

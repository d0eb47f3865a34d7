"""The submissions under `submitted/<student>/<assignment>/`, and what makes one gradeable.

Checked here, before anything is written: the notebook is there, is valid notebook JSON, and
belongs to this assignment (carries at least one of its nbgrader cells). Edited or deleted
graded cells are not fatal: nbgrader restores them from the gradebook; they are reported.
nbgrader metadata is the release's, not the student's: on the release's own cells it is put
back as released (points, grade, schema version...), and anywhere else (an id the assignment
does not have, a second copy of a cell, no id, not a dict) it is removed, so the cell is graded
as an ordinary one. Both are reported. nbgrader itself would stop on either, and a student can
neither add a graded cell nor change what one is worth.
"""

from __future__ import annotations

import datetime
import fnmatch
import hashlib
import json
import os
import re
import stat
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from warnings import catch_warnings, simplefilter

import nbformat
from nbformat.warnings import DuplicateCellId
from nbgrader.utils import parse_utc

from autograder.submission import replace_lone_surrogates
from sdpa_course.assignment import NUMBERS_CELL
from sdpa_course.errors import GradingFailed
from sdpa_course.nbgrader_ext.variants import COURSE_LINE, embedded_key

TIMESTAMP_FILE = "timestamp.txt"
MAX_NOTEBOOK_BYTES = 20 * 2**20  # far above any real notebook of this assignment
MAX_TIMESTAMP_BYTES = 256  # `nbgrader submit` writes about 30: "2026-11-20 09:30:00.000000 UTC"
_COPY_CHUNK = 2**20
NO_TIME = ("graded without a submission time, so late penalty not applied: check the time "
           "by hand")
# The zone of a "date time zone" timestamp, which nbgrader's parse_utc hands to dateutil's
# gettz: an offset or a zoneinfo name ("UTC", "America/New_York"), never a path gettz would
# open (an absolute one, `..`): /proc/kmsg, a regular file to `isfile`, blocks its reader.
_ZONE = re.compile(r"[+-]?[0-9]{1,4}|[A-Za-z0-9_+-]{1,64}(?:/[A-Za-z0-9_+-]{1,64}){0,3}")


@dataclass(frozen=True)
class Submission:
    student: str
    folder: Path  # submitted/<student>/<assignment>
    notebook: Path  # folder / "<notebook>.ipynb"
    # why the student's work is not where nbgrader looks, or its folder's name cannot be a
    # student id nbgrader grades (hidden, not UTF-8): then failed with it
    misplaced: str = ""

    def fingerprint(self) -> str:
        """Changes when the student submits again (notebook bytes or timestamp)."""
        digest = hashlib.sha256()
        for path in (self.notebook, self.folder / TIMESTAMP_FILE):
            digest.update(_fingerprint_bytes(path))
            digest.update(b"\0")
        return digest.hexdigest()


def _fingerprint_bytes(path: Path) -> bytes:
    """A regular file's bytes; for a link, a FIFO or a device only what it is (never read
    through: a link to /dev/zero would never end)."""
    try:
        info = os.lstat(path)
    except OSError:
        return b"<missing>"
    if stat.S_ISLNK(info.st_mode):
        try:
            return b"<link>" + os.fsencode(os.readlink(path))
        except OSError:
            return b"<link>"
    if not stat.S_ISREG(info.st_mode):
        return b"<special>"
    if info.st_size > MAX_NOTEBOOK_BYTES:
        return b"<large>" + str((info.st_size, info.st_mtime_ns)).encode()
    try:
        return read_regular(path, MAX_NOTEBOOK_BYTES)
    except OSError:
        return b"<unreadable>"


def open_regular(path: Path) -> int:
    """A descriptor of the regular file at `path`, or OSError: a symbolic link is not followed
    and a FIFO is not waited on (opened without blocking, then refused like a device), so no
    file a student made can hang or flood the grader, even one swapped in after a check."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path, max_bytes: int) -> bytes:
    """At most `max_bytes` + 1 bytes of the regular file at `path` (`open_regular`): one more
    than allowed says it is too long."""
    fd = open_regular(path)
    try:
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, _COPY_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_timestamp(folder: Path) -> tuple[datetime.datetime | None, str | None, str]:
    """The submission time in `folder`'s timestamp.txt: (time, its text, warning).

    Read as `open_regular` reads (a FIFO, a link to /dev/zero, a device: never opened through)
    and at most `MAX_TIMESTAMP_BYTES`, then parsed by nbgrader's own `parse_utc`. No file:
    (None, None, ""), as nbgrader. A file with no time nbgrader can read: (None, "", why), and
    the submission is graded without a time (nbgrader would stop the whole run or hang), so
    without a late penalty, and `why` ends with `NO_TIME` for a person to check the time
    by hand: the kit has no other submission time it can trust (see README, late penalties).
    """
    path = folder / TIMESTAMP_FILE
    try:
        os.lstat(path)
    except FileNotFoundError:
        return None, None, ""
    except OSError:
        pass  # open_regular says why
    unusable = f"{TIMESTAMP_FILE} holds no submission time nbgrader can read"
    try:
        raw = read_regular(path, MAX_TIMESTAMP_BYTES)
    except OSError:
        return None, "", (f"{TIMESTAMP_FILE} is not a plain file (a folder, a link, a FIFO or "
                          f"a device): {NO_TIME}")
    if len(raw) > MAX_TIMESTAMP_BYTES:
        return None, "", (f"{unusable} (more than {MAX_TIMESTAMP_BYTES} bytes): "
                          f"{NO_TIME}")
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None, "", f"{unusable} (it is not text): {NO_TIME}"
    if not text:
        return None, "", f"{unusable} (it is empty): {NO_TIME}"
    parts = text.split(" ")
    if len(parts) == 3 and not _ZONE.fullmatch(parts[2]):
        return None, "", f"{unusable} (its time zone): {NO_TIME}"
    try:
        when = parse_utc(text)
    except Exception:  # noqa: BLE001 - dateutil raises ValueError, OverflowError, TypeError...
        when = None
    if not isinstance(when, datetime.datetime):
        return None, "", f"{unusable}: {NO_TIME}"
    return when, text, ""


def _not_text(name: str) -> bool:
    """A file name that is not UTF-8 text (Python keeps its stray bytes as surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def escaped_name(name: str) -> str:
    """A file name as text: its bytes that are not UTF-8 shown as `\\xNN` (`bad\\xffname`)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _misplaced(student_dir: Path, assignment: str, notebook: str) -> str:
    """Why `student_dir` holds this assignment's work where nbgrader does not look for it
    (`Sdpa/`, `sdpa` as a file, a notebook beside it: `attention.ipynb`, `attention (1).ipynb`),
    or "" when it holds none at all."""
    shown = escaped_name(student_dir.name)
    folder = f"submitted/{shown}/{assignment}"
    try:
        names = sorted(os.listdir(student_dir))
    except OSError:
        return ""
    if assignment in names:  # there, but not a folder (a folder behind a link is one)
        return (f"{folder} is not a folder (a file, or a link to none): put "
                f"{notebook}.ipynb in a folder named {assignment}")
    other_case = [name for name in names if name.casefold() == assignment.casefold()]
    if other_case:
        return (f"the assignment's folder is named {escaped_name(other_case[0])}, not "
                f"{assignment}: rename it to {assignment} (nbgrader reads that name only)")
    if f"{notebook}.ipynb" in names:
        return (f"{notebook}.ipynb is in submitted/{shown}/ itself, not in "
                f"{folder}/: move it there")
    notebooks = [escaped_name(name) for name in names if name.casefold().endswith(".ipynb")]
    if notebooks:
        return (f"no {folder}/ folder, but notebooks in submitted/{shown}/ itself: "
                f"{_names(notebooks)}: put the notebook, named {notebook}.ipynb, in {folder}/")
    return ""


def find_submissions(submitted_dir: Path, assignment: str, notebook: str) -> list[Submission]:
    """Every `submitted/<student>/<assignment>/` folder, sorted by student id.

    A student folder holding the assignment where nbgrader does not look (`Sdpa/`, `sdpa` as
    a plain file, a notebook beside the folder) is a Submission too, `misplaced` saying so:
    that student is failed with the reason, never skipped without a word. So is a student
    folder holding such work whose name nbgrader skips (a hidden one, `.name`: nbgrader's
    autograde globs `submitted/*/`, which no name with a leading dot matches) or that is not
    UTF-8 text (no student id can be made of it: the variant's key, the gradebook, the
    exports are text); the latter's `student` is the name escaped (`escaped_name`), an id
    that never reaches the gradebook (with `~` after it while another folder has that id).
    A folder with none of the assignment's work is a student of other assignments only (or
    no student: `.git`), and skipped.
    """
    if not submitted_dir.is_dir():
        return []
    found = []
    children = sorted(submitted_dir.iterdir())
    taken = {child.name for child in children if not _not_text(child.name)}
    for student_dir in children:
        folder = student_dir / assignment
        if not student_dir.is_dir():
            continue
        misplaced = "" if folder.is_dir() else _misplaced(student_dir, assignment, notebook)
        if not folder.is_dir() and not misplaced:
            continue  # a student of other assignments only
        student = student_dir.name
        if _not_text(student):
            shown = escaped_name(student)
            student = shown
            while student in taken:  # a real `bad\\xffname`, or another name escaped alike
                student += "~"
            taken.add(student)
            misplaced = (f"the student folder's name, {shown}, is not UTF-8 text, which no "
                         "student id can be made of: rename the folder to the student's id "
                         "and grade again")
        elif student.startswith("."):
            misplaced = (f"the student folder {student} is hidden (its name begins with a "
                         "dot), and nbgrader does not grade hidden folders: rename it to the "
                         "student's id and grade again")
        found.append(Submission(student, folder, folder / f"{notebook}.ipynb", misplaced))
    return sorted(found, key=lambda submission: submission.student)


# What nbgrader's metadata says about a cell; the rest (checksum) is bookkeeping.
_MEANING = ("grade_id", "grade", "solution", "locked", "task", "points", "cell_type",
            "schema_version")


def _release_metadata_only(nb, release: dict[str, dict | None]) -> tuple[list[str], list[str]]:
    """Give each of the release's cells (the first copy) its released nbgrader metadata
    (`release[id]`; None keeps the student's) and remove it from every other cell.
    Returns (ids whose metadata was put back, cells whose metadata was removed)."""
    seen: set[str] = set()
    restored, stripped = [], []
    for index, cell in enumerate(nb.cells):
        if "nbgrader" not in cell.metadata:
            continue
        meta = cell.metadata["nbgrader"]
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if isinstance(grade_id, str) and grade_id in release and grade_id not in seen:
            seen.add(grade_id)
            released = release[grade_id]
            if released is not None:
                if any(meta.get(k) != released.get(k) for k in _MEANING):
                    restored.append(grade_id)
                cell.metadata["nbgrader"] = nbformat.from_dict(dict(released))
            continue
        if isinstance(grade_id, str) and grade_id in seen:
            stripped.append(f"{grade_id} (a second copy)")
        elif isinstance(grade_id, str):
            stripped.append(grade_id)
        else:
            stripped.append(f"cell {index + 1}")
        del cell.metadata["nbgrader"]
    return restored, stripped


def _names(names: list[str]) -> str:
    shown = ", ".join(" ".join(name.split())[:60] for name in names[:10])
    return shown + (f" and {len(names) - 10} more" if len(names) > 10 else "")


def _edited(grade_id: str, submitted: str, released: str) -> bool:
    """The locked cell differs from the release. A *Your numbers* cell that carries no course
    key at all (the kit's answer key, a copy made outside the course) is the release's cell
    before `sdpa-course release` filled in the course: not an edit (it is restored anyway)."""
    if grade_id == NUMBERS_CELL and embedded_key(submitted) == "":
        submitted = COURSE_LINE.sub("", submitted, count=1)
        released = COURSE_LINE.sub("", released, count=1)
    return submitted.strip() != released.strip()


# A submission folder is walked this far, no further: nbgrader's own walk is recursive (a tree
# a thousand folders deep stopped the run) and globs the folder again for every file
# (quadratic: 5,000 files took over a minute). What lies beyond is named, not copied.
MAX_WALKED_ENTRIES = 1000  # files and folders
MAX_WALKED_DEPTH = 16  # folders below the submission's


@dataclass
class Skipped:
    """The files of a submission `copy_regular_files` did not copy (relative paths)."""

    special: list[str]  # symbolic links, FIFOs, devices, gone or unwritable
    too_large: list[str]  # above the course's CourseDirectory.max_file_size
    too_deep: list[str] = field(default_factory=list)  # folders beyond MAX_WALKED_DEPTH
    unread: bool = False  # the folder holds more than MAX_WALKED_ENTRIES: the rest not read

    def warnings(self, max_bytes: int | None) -> list[str]:
        said = []
        if self.unread:
            said.append(f"not copied: the submission holds more than {MAX_WALKED_ENTRIES} "
                        "files and folders, the rest were not read")
        if self.too_deep:
            said.append(f"not copied, folders nested more than {MAX_WALKED_DEPTH} deep: "
                        + _names(sorted(map(escaped_name, self.too_deep))))
        if self.special:
            said.append("not copied (symbolic links or special files): "
                        + _names(sorted(map(escaped_name, self.special))))
        if self.too_large:
            said.append(f"not copied, larger than the course's {max_bytes // 1000} KB "
                        "(CourseDirectory.max_file_size): "
                        + _names(sorted(map(escaped_name, self.too_large))))
        return said


def copy_regular_files(source: Path, dest: Path, ignore: list[str],
                       max_bytes: int | None = None) -> Skipped:
    """Copy `source`'s files into `dest` as nbgrader does (its ignore globs; like nbgrader's
    `ignore_patterns`, a file above `max_bytes`, by its size before anything is read, is
    skipped: a sparse file of a terabyte takes little room where it is and would fill the
    disk once copied), but never through a symbolic link: a link in a submission (to a
    classmate's work, the gradebook, the grader's home) is skipped, not followed."""
    skipped = Skipped([], [])
    if source.is_symlink() or not source.is_dir():
        return skipped
    for path in _walk(source, ignore, skipped):  # linked folders are not entered
        relative = str(path.relative_to(source))
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            skipped.special.append(relative)
            continue
        if max_bytes is not None and info.st_size > max_bytes:
            skipped.too_large.append(relative)
            continue
        try:
            copied = _copy_regular(path, dest / relative, max_bytes)
        except OSError:  # gone, swapped for a FIFO, a name too long for `dest`...
            skipped.special.append(relative)
            continue
        if not copied:
            skipped.too_large.append(relative)
    return skipped


def _ignored(name: str, ignore: list[str]) -> bool:
    """nbgrader's `is_ignored` for one name: a glob of the course's `ignore` matches it (as
    glob does, a pattern that does not start with "." matches no name that does)."""
    return any(fnmatch.fnmatchcase(name, pattern)
               and (pattern.startswith(".") or not name.startswith("."))
               for pattern in ignore)


def _walk(source: Path, ignore: list[str], skipped: Skipped):
    """Every entry under `source` that is not a folder (files, links, FIFOs...), ignored
    names and folders left out, never through a link; a loop, not recursion, within
    `MAX_WALKED_DEPTH` and `MAX_WALKED_ENTRIES` (what lies beyond is noted in `skipped`)."""
    folders, seen = [(source, 0)], 0
    while folders:
        folder, depth = folders.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1  # ignored ones too: each costs the walk its time
                    if seen > MAX_WALKED_ENTRIES:
                        skipped.unread = True
                        return
                    if _ignored(entry.name, ignore):
                        continue
                    path = Path(entry.path)
                    try:
                        is_folder = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_folder = False
                    if not is_folder:
                        yield path
                    elif depth < MAX_WALKED_DEPTH:
                        folders.append((path, depth + 1))
                    else:
                        skipped.too_deep.append(str(path.relative_to(source)))
        except OSError:  # unreadable, or gone meanwhile
            if folder != source:
                skipped.special.append(str(folder.relative_to(source)))


def _copy_regular(path: Path, target: Path, max_bytes: int | None) -> bool:
    """Copy one regular file; False (nothing left at `target`) when it holds more than
    `max_bytes` after all (it grew since it was measured)."""
    fd = open_regular(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        with open(target, "wb") as out:
            while chunk := os.read(fd, _COPY_CHUNK):
                written += len(chunk)
                if max_bytes is not None and written > max_bytes:
                    break
                out.write(chunk)
        if max_bytes is not None and written > max_bytes:
            target.unlink()
            return False
        return True
    finally:
        os.close(fd)


def symlink_in(submission: Submission) -> Path | None:
    """The first of the submission's folders or notebook that is a symbolic link, if any."""
    for path in (submission.folder.parent, submission.folder, submission.notebook):
        if path.is_symlink():
            return path
    return None


def json_break(content: bytes) -> str:
    """Where a notebook's JSON breaks: `line 12, column 5 (Expecting ',' delimiter)`, or ""."""
    try:
        json.loads(content.decode("utf-8-sig"))
    except UnicodeDecodeError as err:
        return f"byte {err.start} is not UTF-8 text"
    except json.JSONDecodeError as err:
        return f"line {err.lineno}, column {err.colno} ({err.msg})"
    except (OSError, ValueError, RecursionError):
        return ""
    return ""


SCHEMA_PASSES = 20  # validations while repairing: each finds at least one break per cell


def _follow_the_schema(nb) -> tuple[list[str], str]:
    """Make `nb` follow nbformat's schema, as nbconvert's exporters check when the feedback is
    rendered (after the gradebook was written: the grades were then lost, every run).
    Metadata entries that break it are removed and cell ids that break it replaced (named in
    the first list); the first break of another kind is returned, and nothing graded."""
    repaired: list[str] = []
    for _ in range(SCHEMA_PASSES):
        errors = [(list(error.absolute_path), error.message)
                  # as nbconvert checks it: properties the schema does not name are allowed
                  for error in nbformat.validator.iter_validate(nb, relax_add_props=True)]
        if not errors:
            return repaired, ""
        for path, message in errors:
            where = "/".join(map(str, path)) or "the notebook"
            if "metadata" in path and len(path) > path.index("metadata") + 1:
                at = path.index("metadata") + 1
                parent = nb
                for step in path[:at]:
                    parent = parent[step]
                if isinstance(parent, dict) and path[at] in parent:
                    del parent[path[at]]
                    repaired.append("/".join(map(str, path[:at + 1])))
            elif len(path) == 3 and path[0] == "cells" and path[2] == "id":
                nb.cells[path[1]]["id"] = uuid.uuid4().hex[:8]  # as nbformat makes them
                repaired.append(where)
            elif len(path) == 2 and path[0] == "cells":
                return repaired, f"cell {path[1] + 1} is not a code, markdown or raw cell"
            else:
                return repaired, f"{where}: {' '.join(message.split())[:200]}"
    return repaired, "its metadata breaks Jupyter's notebook format in too many places"


def read_submitted_notebook(submission: Submission, cell_ids: set[str], grade_ids: set[str],
                            locked_sources: dict[str, str] | None = None,
                            release_metadata: dict[str, dict] | None = None):
    """The notebook and the warnings worth telling the instructor; GradingFailed if hopeless.

    `cell_ids` are the assignment's answer and graded cells (one must be present for the
    notebook to be this assignment's); `grade_ids` the graded ones (reported when deleted);
    `locked_sources` the release's locked cells (reported when edited: nbgrader restores them);
    `release_metadata` every release cell's nbgrader metadata by id, put back on that cell
    (without it: the ids above are the release's, their metadata left as submitted). Any
    other nbgrader metadata is removed. Both are reported.
    """
    path = submission.notebook
    link = symlink_in(submission)
    if link is not None:
        raise GradingFailed(f"{link.name} in the submission is a symbolic link; links are not "
                            "followed: hand in the notebook itself")
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise GradingFailed(f"{path.name} in the submission is a folder, not a notebook file: "
                            "hand in the notebook itself")
    if mode is not None and not stat.S_ISREG(mode):
        raise GradingFailed(f"{path.name} in the submission is not a regular file (a FIFO, a "
                            "socket or a device): hand in the notebook itself")
    if mode is None:
        others = sorted(escaped_name(p.name) for p in submission.folder.glob("*.ipynb"))
        found = f" (found: {_names(others)})" if others else ""
        raise GradingFailed(f"no {path.name} in the submission{found}")
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise GradingFailed(f"{path.name} is {path.stat().st_size // 2**20} MB, more than the "
                            f"{MAX_NOTEBOOK_BYTES // 2**20} MB a notebook may have")
    try:  # read once, as checked: a file swapped for a FIFO since is refused, not waited on
        content = read_regular(path, MAX_NOTEBOOK_BYTES)
    except OSError as err:
        raise GradingFailed(f"{path.name} cannot be read: {err.strerror or err}") from None
    if len(content) > MAX_NOTEBOOK_BYTES:
        raise GradingFailed(f"{path.name} is more than the {MAX_NOTEBOOK_BYTES // 2**20} MB "
                            "a notebook may have")
    try:
        with catch_warnings(record=True) as caught:  # nbformat prints one per cell
            simplefilter("always", DuplicateCellId)
            nb = nbformat.reads(content.decode("utf-8-sig"), as_version=4)
    except Exception as err:  # broken JSON, not UTF-8, not a notebook, unknown nbformat
        where = json_break(content)
        if where:
            raise GradingFailed(f"{path.name} is not a readable notebook: its JSON breaks at "
                                f"{where}. Reopen it in Jupyter or download it again.") from None
        message = " ".join(str(err).split())[:300] or type(err).__name__
        raise GradingFailed(f"{path.name} is not a readable notebook: {message}") from None
    # no UTF-8 file, compiler or page holds half a surrogate pair: writing the autograded
    # notebook stopped the whole run (check reads the notebook the same way)
    broken_characters = replace_lone_surrogates(nb)
    repaired, broken = _follow_the_schema(nb)
    if broken:
        raise GradingFailed(f"{path.name} does not follow Jupyter's notebook format ({broken}). "
                            "Reopen it in Jupyter, save it and hand it in again.")
    if release_metadata is None:
        release_metadata = dict.fromkeys({*cell_ids, *grade_ids, *(locked_sources or {})})
    restored, stripped = _release_metadata_only(nb, release_metadata)
    present = {
        cell.metadata.get("nbgrader", {}).get("grade_id")
        for cell in nb.cells
        if isinstance(cell.metadata.get("nbgrader"), dict)
    }
    if cell_ids and not (present & cell_ids):
        raise GradingFailed(
            f"{path.name} is not this assignment's notebook: none of its answer or graded "
            f"cells ({', '.join(sorted(cell_ids))}) is in it"
        )
    warnings = []
    duplicates = sum(issubclass(w.category, DuplicateCellId) for w in caught)
    if duplicates:
        warnings.append(f"{duplicates} cell ids used twice, replaced as nbformat does")
    if repaired:
        warnings.append(f"parts that break Jupyter's notebook format removed: {_names(repaired)}")
    if broken_characters:
        warnings.append(f"{broken_characters} characters that are half of a surrogate pair (a "
                        "broken emoji) read as U+FFFD")
    if restored:
        warnings.append(f"nbgrader metadata edited and put back as released: "
                        f"{_names(restored)}")
    if stripped:
        warnings.append(f"nbgrader metadata the release does not have, removed (graded as "
                        f"ordinary cells): {_names(stripped)}")
    edited = sorted(
        cell.metadata["nbgrader"]["grade_id"]
        for cell in nb.cells
        if isinstance(cell.metadata.get("nbgrader"), dict)
        and cell.metadata["nbgrader"].get("grade_id") in (locked_sources or {})
        and _edited(cell.metadata["nbgrader"]["grade_id"], cell.source,
                    locked_sources[cell.metadata["nbgrader"]["grade_id"]])
    )
    if edited:
        warnings.append(f"locked cells edited and restored from the release: {', '.join(edited)}")
    missing = sorted(grade_ids - present)
    if missing:
        warnings.append(f"graded cells deleted and restored from the release: "
                        f"{', '.join(missing)}")
    return nb, warnings

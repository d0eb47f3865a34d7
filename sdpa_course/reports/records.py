"""Each student's grading result, kept on disk so a rerun resumes and the report is whole.

One JSON file per student under `reports/<assignment>/results/`, written last (after the
gradebook and the feedback) and atomically: a student with a record is done; a run stopped
half-way leaves no record for the student it was on, who is graded again next time.

The file is `<id>.json` when the id makes a plain file name with room for the temporary
`.json.tmp` within the file system's NAME_MAX; any other id (a 250-byte folder name, a leading
dot) gets a readable prefix and a digest of the whole id (`record_path`). The id itself is
kept inside the JSON, which is what `load_records` reads, so either name resumes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path

_SUFFIX, _TMP = ".json", ".tmp"
_PREFIX_BYTES = 64  # of a long id, kept in its record's name for a person listing the folder
_DIGEST_CHARS = 32
_DIGESTED = re.compile(rf".*~[0-9a-f]{{{_DIGEST_CHARS}}}", re.S)  # a name `record_path` makes

GRADED = "graded"
FAILED = "failed"
# the diagnoses that say a cell of the exercise did not run to the end: stopped or crashed
STOPPED_CODES = ("timeout", "crashed", "memory-limit")


STOPPED_CELLS_SHOWN = 3  # cells named in a record's note; the feedback lists them all


def stopped_cells(report: dict) -> list[str]:
    """`cell 49 (timeout)` for the cells outside every exercise (a student's own extra cell,
    the kit's) that did not run to the end, when no exercise's diagnosis already says that
    code was stopped or crashed: a hang in a scratch cell costs no point and must still
    show beside the score. At most `STOPPED_CELLS_SHOWN`, then how many more."""
    exercises = report.get("exercises") or {}
    if any(code in STOPPED_CODES for result in exercises.values() if isinstance(result, dict)
           for code in result.get("diagnoses") or []):
        return []
    cells = [f"{c.get('cell')} ({c.get('status')})" for c in report.get("cells") or []
             if isinstance(c, dict) and c.get("status") != "ok" and not c.get("exercises")]
    more = len(cells) - STOPPED_CELLS_SHOWN
    said = f"{more} more cell" + ("s" if more > 1 else "")
    return cells[:STOPPED_CELLS_SHOWN] + ([said] if more > 0 else [])


def folded_note(folded) -> str:
    """`pages fold 99,776 cells (1,188,890 characters)`, or "" for a record without."""
    if not isinstance(folded, dict):
        return ""
    cells, chars = folded.get("cells"), folded.get("chars")
    if not isinstance(cells, int) or not isinstance(chars, int) or cells <= 0:
        return ""
    return (f"pages fold {cells:,} cells ({chars:,} characters): beyond a page's budget, "
            "graded but not shown")


def graded_record(student: str, report: dict, fingerprint: str, warnings: list[str],
                  check_by_hand: list[str] | None = None, *,
                  folded: dict | None = None) -> dict:
    """A graded student; `check_by_hand`: what a person must still check in it (a
    submission time the kit could not read, so no late penalty applied), also in warnings;
    `stopped_cells`: cells outside the exercises that did not run to the end, also in
    warnings; `folded_cells`: the cells its pages fold into one notice ({"cells", "chars"};
    `nbgrader_ext/cell_budget.py`), also in warnings."""
    stopped = stopped_cells(report)
    if stopped:
        warnings = [*warnings, f"did not run to the end: {', '.join(stopped)}"]
    if folded_note(folded):
        warnings = [*warnings, folded_note(folded)]
    return {
        "student": student,
        "status": GRADED,
        "score": float(report["score"]),
        "max_score": float(report["max_score"]),
        "extra_credit": float(report.get("extra_credit", 0.0)),
        "exercises": report["exercises"],
        "variant": report.get("variant"),  # whose numbers were graded (no hidden input)
        "error": None,
        "warnings": warnings,
        "check_by_hand": list(check_by_hand or []),
        "stopped_cells": stopped,
        "folded_cells": folded if folded_note(folded) else None,
        "isolation": report.get("isolation", "namespaces"),  # how its code ran
        "fingerprint": fingerprint,
        "retry": False,
        "recorded_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def failed_record(student: str, error: str, fingerprint: str, *, retry: bool = False,
                  warnings: list[str] | None = None) -> dict:
    """A student the kit could not grade: no score at all, never a plain 0."""
    return {
        "student": student,
        "status": FAILED,
        "score": None,
        "max_score": None,
        "extra_credit": None,
        "exercises": {},
        "variant": None,  # filled in by the run, which knows the student's variant
        "error": error,
        "warnings": warnings or [],
        "fingerprint": fingerprint,
        "retry": retry,
        "recorded_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def to_check(record: dict) -> list[str]:
    """What a person must check by hand in a graded student's record (none when failed: its
    reason says it all)."""
    if record.get("status") != GRADED:
        return []
    found = record.get("check_by_hand")
    if found is None:  # a record of a kit before the key: its warning said it alone
        found = [w for w in record.get("warnings") or []
                 if isinstance(w, str) and w.startswith("timestamp.txt ")
                 and w.endswith("graded without a submission time")]
    return [str(item) for item in found] if isinstance(found, list) else []


def stopped_runs(record: dict) -> list[str]:
    """`ex2: timeout` for each exercise whose code was stopped or crashed in a graded
    student's record, then its `stopped_cells` (`cell 49 (timeout)`): the grade table and
    the exports say so beside the score (a hang after the answers can cost nothing, and
    must still show wherever a score shows)."""
    if record.get("status") != GRADED:
        return []
    found = []
    for exercise, result in sorted((record.get("exercises") or {}).items()):
        codes = result.get("diagnoses") if isinstance(result, dict) else None
        for code in codes if isinstance(codes, list) else []:
            if code in STOPPED_CODES:
                found.append(f"{exercise}: {code}")
    cells = record.get("stopped_cells")
    return found + ([str(cell) for cell in cells] if isinstance(cells, list) else [])


def not_answered(record: dict) -> list[str]:
    """The exercises of a graded student's record with an answer left as the release has it
    (diagnosis `not-answered`): `ex2`. The grade table, grades.csv and the exports say so
    beside the score, so that a blank reads as a blank, never as a crash."""
    if record.get("status") != GRADED:
        return []
    return [exercise for exercise, result in sorted((record.get("exercises") or {}).items())
            if isinstance(result, dict) and isinstance(result.get("diagnoses"), list)
            and "not-answered" in result["diagnoses"]]


def results_dir(reports_dir: Path) -> Path:
    return reports_dir / "results"


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255  # Linux's, and most file systems'


def record_path(reports_dir: Path, student: str) -> Path:
    """Where `student`'s record is: `<id>.json`, or for an id that cannot be a file name with
    its suffixes, `<first 64 bytes>~<digest of the id>.json` (never another id's name: a plain
    id that looks like such a name is digested too)."""
    folder = results_dir(reports_dir)
    name = os.fsencode(student)
    limit = _name_max(folder if folder.is_dir() else reports_dir if reports_dir.is_dir()
                      else Path("/"))
    if (name and not name.startswith(b".") and b"/" not in name and b"\0" not in name
            and len(name) + len(_SUFFIX + _TMP) <= limit and not _DIGESTED.fullmatch(student)):
        return folder / f"{student}{_SUFFIX}"
    digest = hashlib.sha256(name).hexdigest()[:_DIGEST_CHARS]
    prefix = name[:_PREFIX_BYTES].decode("utf-8", "ignore")  # whole characters only
    prefix = prefix.replace("/", "_").replace("\0", "_").lstrip(".")
    return folder / f"{prefix}~{digest}{_SUFFIX}"


def save_record(reports_dir: Path, record: dict) -> None:
    path = record_path(reports_dir, record["student"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + _TMP)
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
    os.replace(tmp, path)


def load_records(reports_dir: Path) -> dict[str, dict]:
    records = {}
    folder = results_dir(reports_dir)
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # a damaged record only means that student is graded again
        records[record.get("student", path.stem)] = record
    return records


def forget_record(reports_dir: Path, student: str) -> None:
    record_path(reports_dir, student).unlink(missing_ok=True)

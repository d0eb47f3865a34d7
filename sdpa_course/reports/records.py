"""Each student's grading result, kept on disk so a rerun resumes and the report is whole.

One JSON file per student under `reports/<assignment>/results/`, written last (after the
gradebook and the feedback) and atomically: a student with a record is done; a run stopped
half-way leaves no record for the student it was on, who is graded again next time.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

GRADED = "graded"
FAILED = "failed"


def graded_record(student: str, report: dict, fingerprint: str, warnings: list[str]) -> dict:
    return {
        "student": student,
        "status": GRADED,
        "score": float(report["score"]),
        "max_score": float(report["max_score"]),
        "exercises": report["exercises"],
        "error": None,
        "warnings": warnings,
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
        "exercises": {},
        "error": error,
        "warnings": warnings or [],
        "fingerprint": fingerprint,
        "retry": retry,
        "recorded_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def results_dir(reports_dir: Path) -> Path:
    return reports_dir / "results"


def save_record(reports_dir: Path, record: dict) -> None:
    folder = results_dir(reports_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record['student']}.json"
    tmp = path.with_suffix(".json.tmp")
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
    (results_dir(reports_dir) / f"{student}.json").unlink(missing_ok=True)

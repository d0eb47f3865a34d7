"""The class report: score distributions and diagnosis frequencies, as PNGs in one HTML page.

Written to `reports/<assignment>/` by `sdpa-course grade`:
`class_report.html`, `scores.png`, `diagnoses.png` and `scores.csv` (one row per student,
one column per exercise, plus status and reason; a failed student has empty scores, never 0).
"""

from __future__ import annotations

import csv
import html
from collections import Counter
from pathlib import Path

from sdpa_course.reports.records import FAILED, GRADED


def exercise_names(records: dict[str, dict]) -> list[str]:
    return sorted({ex for r in records.values() for ex in r.get("exercises") or {}})


def diagnosis_counts(records: dict[str, dict]) -> Counter:
    """How many students got each diagnosis (once per student, whatever the exercise)."""
    counts: Counter = Counter()
    for record in records.values():
        codes = {code for ex in (record.get("exercises") or {}).values()
                 for code in ex.get("diagnoses") or []}
        counts.update(codes)
    return counts


def write_csv(records: dict[str, dict], path: Path) -> None:
    exercises = exercise_names(records)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "status", "score", "max_score", *exercises,
                         "diagnoses", "reason"])
        for student, record in sorted(records.items()):
            graded = record["status"] == GRADED
            per_exercise = [
                f"{record['exercises'][ex]['score']:g}" if graded and ex in record["exercises"]
                else "" for ex in exercises
            ]
            codes = sorted({c for ex in (record.get("exercises") or {}).values()
                            for c in ex.get("diagnoses") or []})
            reason = record.get("error") or "; ".join(record.get("warnings") or [])
            writer.writerow([
                student, record["status"],
                f"{record['score']:g}" if graded else "",
                f"{record['max_score']:g}" if graded else "",
                *per_exercise, " ".join(codes), reason,
            ])


def _pyplot():
    """matplotlib's pyplot, drawing to files only.

    Deferred: importing pyplot takes about half a second and picks a global backend, which
    only the class report needs (and `Agg` must be chosen before pyplot is imported).
    """
    import matplotlib  # deferred: see above

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: see above

    return plt


def _plot_scores(records: dict[str, dict], path: Path) -> None:
    plt = _pyplot()
    exercises = exercise_names(records)
    graded = [r for r in records.values() if r["status"] == GRADED]
    fig, axes = plt.subplots(1, max(1, len(exercises)), figsize=(4 * max(1, len(exercises)), 3),
                             squeeze=False)
    for ax, ex in zip(axes[0], exercises, strict=False):
        scores = [r["exercises"][ex]["score"] for r in graded if ex in r["exercises"]]
        top = max([r["exercises"][ex]["max_score"] for r in graded if ex in r["exercises"]] or [1])
        counts = Counter(scores)  # one bar per score actually given (half points exist)
        ax.bar(list(counts), list(counts.values()), width=0.4, color="#4c72b0")
        ax.set_xlim(-0.5, top + 0.5)
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_title(f"{ex} (max {top:g})")
        ax.set_xlabel("score")
        ax.set_ylabel("students")
    if not exercises:
        axes[0][0].text(0.5, 0.5, "no graded submissions", ha="center", va="center")
        axes[0][0].set_axis_off()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _plot_diagnoses(counts: Counter, path: Path) -> None:
    plt = _pyplot()
    items = counts.most_common()
    fig, ax = plt.subplots(figsize=(7, 0.35 * max(3, len(items)) + 1))
    if items:
        codes, values = zip(*reversed(items), strict=True)
        ax.barh(codes, values, color="#dd8452")
        ax.set_xlabel("students")
        ax.xaxis.get_major_locator().set_params(integer=True)
    else:
        ax.text(0.5, 0.5, "no diagnoses: every graded exercise was correct",
                ha="center", va="center")
        ax.set_axis_off()
    ax.set_title("Diagnoses across the class")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _html(records: dict[str, dict], counts: Counter, assignment: str) -> str:
    graded = [r for r in records.values() if r["status"] == GRADED]
    failed = [r for r in records.values() if r["status"] == FAILED]
    mean = sum(r["score"] for r in graded) / len(graded) if graded else 0.0
    top = graded[0]["max_score"] if graded else 0.0
    rows = "".join(
        f"<tr><td>{html.escape(r['student'])}</td><td>{html.escape(r['error'] or '')}</td></tr>"
        for r in failed
    )
    failed_table = (
        f"<h2>Failed: {len(failed)} (no score recorded)</h2>"
        f"<table><tr><th>student</th><th>reason</th></tr>{rows}</table>"
        if failed else "<p>No failed submissions.</p>"
    )
    diag_rows = "".join(f"<tr><td><code>{html.escape(c)}</code></td><td>{n}</td></tr>"
                        for c, n in counts.most_common())
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Class report: {html.escape(assignment)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.2em .6em}}
img{{max-width:100%}}</style>
</head><body>
<h1>Class report: {html.escape(assignment)}</h1>
<p>{len(records)} students: {len(graded)} graded, {len(failed)} failed.
Mean automatic score of the graded: {mean:.2f} / {top:g}. Scores per student:
<a href="scores.csv">scores.csv</a>.</p>
<h2>Score distribution per exercise</h2>
<img src="scores.png" alt="histogram of scores per exercise">
<h2>Diagnoses</h2>
<img src="diagnoses.png" alt="how many students got each diagnosis">
<table><tr><th>diagnosis</th><th>students</th></tr>{diag_rows}</table>
{failed_table}
</body></html>
"""


def write_class_report(records: dict[str, dict], out_dir: Path, assignment: str) -> dict:
    """Write the report files; return their paths by name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = diagnosis_counts(records)
    paths = {
        "class report": out_dir / "class_report.html",
        "scores (CSV)": out_dir / "scores.csv",
        "score histograms": out_dir / "scores.png",
        "diagnosis chart": out_dir / "diagnoses.png",
    }
    write_csv(records, paths["scores (CSV)"])
    _plot_scores(records, paths["score histograms"])
    _plot_diagnoses(counts, paths["diagnosis chart"])
    paths["class report"].write_text(_html(records, counts, assignment), encoding="utf-8")
    return paths

"""The class report a lecturer teaches from, and the CSV files a spreadsheet or an LMS reads.

Written to `reports/<assignment>/` by `sdpa-course grade` (and `sdpa-course feedback`):

- `class_report.html`: per exercise the score distribution (`scores.svg`), the pass rate of
  each test among the students who answered it (and how many did not: an answer left as
  released, `not-answered`; an exercise nobody answered reads *not attempted*), and each
  diagnosis with its meaning and the students who have it (to invite them to a help
  session); hand grading (written answers marked and pending, and where to mark
  them); the submissions to check by hand (graded, but a submission time that could not
  be read: no late penalty applied), the submissions whose pages fold cells beyond their
  budget (`records.folded_note`), failed submissions with their reasons; late
  submissions;
- `scores.csv`: one row per student: status, automatic score, the extra credit of the
  optional exercise 4 (never counted in the score or its maximum), each exercise's score and its
  diagnoses (one column per exercise), the hand-graded answers (score or `pending`), the late
  penalty, the reason of a failure (never a 0 for a student who could not be graded) and the
  student's variant (whose numbers were graded; `default` for the lesson's own);
- `diagnoses.csv`: one row per (student, exercise, code), with the code's meaning;
- `grades.csv`: the export for an LMS upload: every student (graded, failed, missing), the
  automatic points, the extra credit, the hand points, the late penalty and the total (extra
  credit included, as nbgrader's gradebook counts it; empty, with the reason, for a student
  without one), and `needs_review`: `yes` for a total that must not be uploaded unread (a
  failed student, or one to check by hand, the reason saying what). The reason also names
  each exercise whose code hung or crashed (`did not run to the end: ex2: timeout`), or the
  cells outside the exercises that did (`records.stopped_runs`), and those left as released
  (`not answered: ex1, ex3`), which a score alone does not show; the HTML report lists the
  cells under *Code stopped outside the exercises*.

The pictures (`scores.svg`, `diagnoses.svg`: the score histograms and the diagnoses' bars)
are written as SVG by `reports.charts`, without a plotting library.

Plain data in: the students' records, the gradebook's hand marks (`marks`, see
`grading.hand_marks`) and the students nbgrader knows who submitted nothing (`missing`).
Every CSV cell of text goes through `safe_text.for_spreadsheet` (no formula can start a
cell), and every string in the HTML is escaped (invisible characters shown).
"""

from __future__ import annotations

import csv
import html
from collections import Counter, defaultdict
from pathlib import Path

from autograder.diagnoses.codes import WORDING, lesson_section
from sdpa_course.reports.charts import diagnosis_chart, score_histograms
from sdpa_course.reports.feedback_text import exercise_heading, points
from sdpa_course.reports.records import (
    FAILED,
    GRADED,
    folded_note,
    not_answered,
    stopped_runs,
    to_check,
)
from sdpa_course.reports.safe_text import for_spreadsheet, for_terminal

MISSING = "missing"
CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"  # no script
DIAGNOSES_ALT = ("Bars: how many students got each diagnosis, per exercise (the tables below "
                 "give the same numbers)")
FORMGRADER_PATH = "formgrader/gradebook/{assignment}/{notebook}"
# What kit versions before the SVG pictures wrote, removed so that no stale picture remains.
OLD_PICTURES = ("scores.png", "diagnoses.png", ".pictures.json")


def exercise_names(records: dict[str, dict]) -> list[str]:
    return sorted({ex for r in records.values() for ex in r.get("exercises") or {}})


def students_by_diagnosis(records: dict[str, dict], exercise: str) -> dict[str, list[str]]:
    """Code -> the students with it on `exercise`, in the codes' order."""
    found: dict[str, list[str]] = defaultdict(list)
    for student, record in sorted(records.items()):
        for code in (record.get("exercises") or {}).get(exercise, {}).get("diagnoses") or []:
            found[code].append(student)
    order = list(WORDING)
    return dict(sorted(found.items(), key=lambda item: (
        order.index(item[0]) if item[0] in order else len(order), item[0])))


NOT_ANSWERED = "not-answered"


def left_as_released(result: dict) -> bool:
    """An exercise's result with no answer in it: the optional exercise not attempted, or
    every test of it an answer left as released (`not-answered`)."""
    tests = result.get("tests") or []
    return result.get("attempted") is False or (
        bool(tests) and all(test.get("answered") is False for test in tests))


def pass_rates(records: dict[str, dict], exercise: str) -> list[tuple[str, int, int, int]]:
    """(test, students who passed it, students who answered it, students who left it as
    released) for each test of `exercise`, over the graded students: a blank is no failure."""
    passed: Counter = Counter()
    answered: Counter = Counter()
    blank: Counter = Counter()
    order: list[str] = []
    for record in records.values():
        if record["status"] != GRADED:
            continue
        result = (record.get("exercises") or {}).get(exercise, {})
        unattempted = result.get("attempted") is False
        for test in result.get("tests") or []:
            name = str(test.get("name"))
            if name not in order:
                order.append(name)
            if unattempted or test.get("answered") is False:
                blank[name] += 1
            else:
                answered[name] += 1
                passed[name] += bool(test.get("passed"))
    return [(name, passed[name], answered[name], blank[name]) for name in order]


def _written(marks: dict[str, dict], student: str) -> dict[str, dict]:
    return (marks.get(student) or {}).get("written") or {}


def written_names(marks: dict[str, dict]) -> list[str]:
    return sorted({name for m in marks.values() for name in m.get("written") or {}})


def totals(record: dict, marks: dict[str, dict]) -> dict:
    """The automatic, hand and total points of a graded student (strings, CSV-ready)."""
    written = _written(marks, record["student"])
    hand = sum(m["score"] for m in written.values() if m["score"] is not None)
    hand_max = sum(m["max_score"] for m in written.values())
    pending = [name for name, m in written.items() if m["score"] is None]
    penalty = float((marks.get(record["student"]) or {}).get("late_penalty") or 0.0)
    extra = float(record.get("extra_credit") or 0.0)  # exercise 4: on top, never in the max
    total = max(0.0, record["score"] + extra + hand - penalty)
    return {"auto": points(record["score"]), "auto_max": points(record["max_score"]),
            "extra_credit": points(extra),
            "hand": points(hand), "hand_max": points(hand_max), "pending": pending,
            "penalty": points(penalty), "total": points(total),
            "max_total": points(record["max_score"] + hand_max)}


def _text_row(values) -> list[str]:
    return [for_spreadsheet(v) for v in values]


def variant_label(record: dict) -> str:
    """The label of the student's variant (`default`: the lesson's numbers), "" if unknown."""
    variant = record.get("variant") or {}
    return str(variant.get("label", "")) if isinstance(variant, dict) else ""


def variants_sentence(records: dict[str, dict]) -> str:
    labels = {variant_label(r) for r in records.values()} - {""}
    if labels <= {"default"}:
        return "Every student worked the lesson's own numbers (the default variant)."
    return (f"Each student worked their own numbers: {len(labels)} variants, each student's "
            "in the last column of scores.csv (`sdpa-course variant STUDENT` prints its "
            "numbers and expected answers).")


def write_scores_csv(records: dict[str, dict], marks: dict[str, dict], path: Path) -> None:
    exercises = exercise_names(records)
    written = written_names(marks)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "status", "score", "max_score", "extra_credit", *exercises,
                         *(f"{ex} diagnoses" for ex in exercises), *written,
                         "late_penalty", "reason", "variant"])
        for student, record in sorted(records.items()):
            graded = record["status"] == GRADED
            results = record.get("exercises") or {}
            per_exercise = [points(results[ex]["score"]) if graded and ex in results else ""
                            for ex in exercises]
            codes = [" ".join(results.get(ex, {}).get("diagnoses") or []) for ex in exercises]
            hand = [("pending" if m["score"] is None else points(m["score"]))
                    if (m := _written(marks, student).get(name)) else "" for name in written]
            penalty = (marks.get(student) or {}).get("late_penalty")
            reason = record.get("error") or "; ".join(record.get("warnings") or [])
            writer.writerow(_text_row([
                student, record["status"],
                points(record["score"]) if graded else "",
                points(record["max_score"]) if graded else "",
                points(record.get("extra_credit") or 0.0) if graded else "",
                *per_exercise, *codes, *hand,
                points(penalty) if graded and penalty is not None else "", reason,
                variant_label(record),
            ]))


def write_diagnoses_csv(records: dict[str, dict], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "exercise", "code", "meaning"])
        for student, record in sorted(records.items()):
            for exercise, result in sorted((record.get("exercises") or {}).items()):
                for code in result.get("diagnoses") or []:
                    meaning = WORDING[code].meaning if code in WORDING else ""
                    writer.writerow(_text_row([student, exercise, code, meaning]))


def write_grades_csv(records: dict[str, dict], marks: dict[str, dict], missing: list[str],
                     path: Path) -> None:
    """One row per student for an LMS: never a silent 0 (failed and missing say why)."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student_id", "status", "auto_score", "auto_max", "extra_credit",
                         "hand_score", "hand_max", "hand_pending", "late_penalty", "total",
                         "max_total", "reason", "needs_review"])
        for student, record in sorted(records.items()):
            if record["status"] == GRADED:
                t = totals(record, marks)
                check = [f"CHECK BY HAND: {item}" for item in to_check(record)]
                stopped = [f"did not run to the end: {item}" for item in stopped_runs(record)]
                blank = not_answered(record)
                stopped += [f"not answered: {', '.join(blank)}"] if blank else []
                pending = (["hand grading pending: " + ", ".join(t["pending"])]
                           if t["pending"] else [])
                writer.writerow(_text_row([
                    student, GRADED, t["auto"], t["auto_max"], t["extra_credit"], t["hand"],
                    t["hand_max"],
                    "yes" if t["pending"] else "no", t["penalty"], t["total"], t["max_total"],
                    "; ".join(check + stopped + pending), "yes" if check else "no"]))
            else:
                writer.writerow(_text_row([student, FAILED, "", "", "", "", "", "", "", "", "",
                                           record.get("error") or "could not be graded",
                                           "yes"]))
        for student in sorted(missing):
            writer.writerow(_text_row([student, MISSING, "", "", "", "", "", "", "", "", "",
                                       "no submission", "no"]))


def score_counts(records: dict[str, dict]) -> list[tuple[str, float, list[list[float]]]]:
    """(exercise, max score, [[score, students], ...]) per exercise: the histograms' data."""
    graded = [r for r in records.values() if r["status"] == GRADED]
    histograms = []
    for ex in exercise_names(records):
        scores = [r["exercises"][ex]["score"] for r in graded if ex in r["exercises"]]
        top = max([r["exercises"][ex]["max_score"] for r in graded if ex in r["exercises"]] or [1])
        counts = Counter(scores)  # one bar per score actually given (half points exist)
        histograms.append((ex, top, sorted([score, n] for score, n in counts.items())))
    return histograms


def diagnosis_bars(records: dict[str, dict]) -> list[tuple[str, int]]:
    """("exercise: code", students) per diagnosis given, blanks aside (the exercises' sections
    count them): the diagnosis chart's data."""
    return [(f"{ex}: {code}", len(students)) for ex in exercise_names(records)
            for code, students in students_by_diagnosis(records, ex).items()
            if code != NOT_ANSWERED]


def _e(value) -> str:
    """Escaped for HTML, with control and invisible characters shown as escapes (an id's
    U+202E would reverse the rest of a list of students)."""
    return html.escape(for_terminal(value))


def _table(header: tuple[str, ...], rows) -> str:
    """An HTML table of `rows` under `header`, every cell escaped."""
    head = "".join(f"<th>{_e(name)}</th>" for name in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _rate(ok: int, answered: int, blank: int) -> str:
    """A pass rate's row: passed / answered, the rate, and how many left it as released."""
    rate = f"{100 * ok / answered:.0f}%" if answered else "not attempted"
    return (f"<td>{ok} / {answered}</td><td>{rate}</td>"
            f"<td>{blank}</td>")


def _exercise_section(records: dict[str, dict], exercise: str) -> str:
    graded = [r for r in records.values() if r["status"] == GRADED and exercise in r["exercises"]]
    blank = sorted(r["student"] for r in graded if left_as_released(r["exercises"][exercise]))
    heading = f"<h3 id='{_e(exercise)}'>{_e(exercise_heading(exercise))}</h3>"
    if graded and len(blank) == len(graded):
        return (heading + f"<p>Not attempted: none of the {len(graded)} graded students "
                "answered this exercise (every answer is as the notebook was handed out), "
                "so it has no pass rates and no diagnoses.</p>")
    answering = [r for r in graded if r["student"] not in blank]
    scores = [r["exercises"][exercise]["score"] for r in answering]
    top = graded[0]["exercises"][exercise]["max_score"] if graded else 0
    full = sum(1 for r in answering if r["exercises"][exercise]["score"] >= top)
    mean = sum(scores) / len(scores) if scores else 0.0
    rates = "".join(f"<tr><td>{_e(name)}</td>{_rate(ok, answered, left)}</tr>"
                    for name, ok, answered, left in pass_rates(records, exercise))
    not_answered = (f"<p>Not answered (left as the notebook was handed out) by {len(blank)}: "
                    f"{_e(', '.join(blank))}. They are left out of the mean and of the pass "
                    "rates.</p>" if blank else "")
    diagnoses = []
    for code, students in students_by_diagnosis(records, exercise).items():
        if code == NOT_ANSWERED:
            continue  # counted per test above, and named there: not a mistake
        wording = WORDING.get(code)
        section = lesson_section(code, exercise)
        diagnoses.append(
            f"<tr><td><code>{_e(code)}</code></td><td>{len(students)}</td>"
            f"<td>{_e(wording.meaning) if wording else ''}"
            f"{'<br><span class=note>' + _e(wording.explanation) + '</span>' if wording else ''}"
            f"{'<br><span class=note>lesson: ' + _e(section.title) + '</span>' if section else ''}"
            f"</td><td>{_e(', '.join(students))}</td></tr>")
    short = len(answering) - full
    undiagnosed = ("every answer was correct" if not short else
                   f"{short} answering student{'s' if short != 1 else ''} without full marks, "
                   "and no mistake the grader recognises (the pass rates above show which "
                   "tests failed)")
    diag_table = (
        "<table><tr><th>diagnosis</th><th>students</th><th>meaning</th><th>who</th></tr>"
        + "".join(diagnoses) + "</table>" if diagnoses else
        f"<p>No diagnoses: {undiagnosed}.</p>")
    return (heading
            + f"<p>{len(graded)} graded, {len(answering)} answered it; mean of those who "
            f"answered {mean:.2f} / {points(top)}; full marks: {full}.</p>{not_answered}"
            f"<h4>Pass rate of each test</h4><table><tr><th>test</th><th>passed / answered"
            f"</th><th>rate</th><th>not answered</th></tr>{rates}</table>"
            f"<h4>Diagnoses</h4>{diag_table}")


def _hand_section(records, marks, assignment: str, notebook: str) -> str:
    names = written_names(marks)
    if not names:
        return "<p>No answers are graded by hand in this assignment.</p>"
    rows = []
    for name in names:
        marked = [s for s in sorted(marks) if (_written(marks, s).get(name) or {}).get("score")
                  is not None]
        pending = [s for s in sorted(marks) if name in _written(marks, s)
                   and _written(marks, s)[name]["score"] is None]
        rows.append(f"<tr><td><code>{_e(name)}</code></td><td>{len(marked)}</td>"
                    f"<td>{len(pending)}</td><td>{_e(', '.join(pending))}</td></tr>")
    path = FORMGRADER_PATH.format(assignment=assignment, notebook=notebook)
    return ("<table><tr><th>answer</th><th>marked</th><th>pending</th><th>still to mark</th></tr>"
            + "".join(rows) + "</table>"
            f"<p>Mark them in formgrader: Manual Grading → {_e(assignment)} → {_e(notebook)} "
            f"(on the Jupyter server: <code>/{_e(path)}</code>, for example "
            f"<a href='http://localhost:8888/{_e(path)}'>http://localhost:8888/{_e(path)}</a>). "
            "Then run <code>sdpa-course grade</code> (or <code>sdpa-course feedback</code>) "
            "again: the feedback of every student whose marks changed is regenerated.</p>")


def _html(records, marks, missing, assignment: str, notebook: str, note: str = "") -> str:
    graded = [r for r in records.values() if r["status"] == GRADED]
    failed = [r for r in records.values() if r["status"] == FAILED]
    mean = sum(r["score"] for r in graded) / len(graded) if graded else 0.0
    top = graded[0]["max_score"] if graded else 0.0
    failed_table = (
        f"<h2>Failed: {len(failed)} (no score recorded)</h2>"
        + _table(("student", "reason"), [(r["student"], r["error"] or "") for r in
                                         sorted(failed, key=lambda r: r["student"])])
        if failed else "<h2>Failed</h2><p>No failed submissions.</p>")
    checks = [(r["student"], item) for r in sorted(records.values(), key=lambda r: r["student"])
              for item in to_check(r)]
    check_table = (
        f"<h2>Submissions to check by hand: {len(checks)}</h2>"
        "<p>Graded, but something the grade depends on could not be read (a submission time "
        "the kit could not read: no late penalty was applied).</p>"
        + _table(("student", "reason"), checks) if checks else "")
    stopped = [(r["student"], ", ".join(map(str, r["stopped_cells"])))
               for r in sorted(graded, key=lambda r: r["student"])
               if isinstance(r.get("stopped_cells"), list) and r["stopped_cells"]]
    stopped_table = (
        f"<h2>Code stopped outside the exercises: {len(stopped)}</h2>"
        "<p>A cell of no exercise did not run to the end (a hang or a crash after the "
        "answers): no point was lost, and each student's feedback shows the cell.</p>"
        + _table(("student", "cells"), stopped) if stopped else "")
    folded = [(r["student"], f"{r['folded_cells']['cells']:,}",
               f"{r['folded_cells']['chars']:,}")
              for r in sorted(graded, key=lambda r: r["student"])
              if folded_note(r.get("folded_cells"))]
    folded_table = (
        f"<h2>Submissions too long for a page: {len(folded)}</h2>"
        "<p>More cells than a page shows (every graded cell, then a few hundred others): "
        "every cell was run and graded, and the feedback and formgrader fold the rest into "
        "one notice. The whole notebook is in <code>submitted/</code>.</p>"
        + _table(("student", "cells folded", "their characters"), folded) if folded else "")
    late = [(s, m["timestamp"], f"{m['seconds_late'] / 3600:.1f} h", points(m["late_penalty"]))
            for s, m in sorted(marks.items()) if m.get("seconds_late", 0) > 0]
    late_table = (_table(("student", "submitted", "late by", "penalty"), late) if late
                  else "<p>No late submissions recorded by nbgrader.</p>")
    missing_part = (f"<h2>Missing: {len(missing)}</h2><p>In the gradebook, nothing submitted: "
                    f"{_e(', '.join(missing))}.</p>" if missing else "")
    sections = "".join(_exercise_section(records, ex) for ex in exercise_names(records))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Class report: {_e(assignment)}</title>
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<style>body{{font-family:sans-serif;max-width:64em;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse;margin:.4em 0}}td,th{{border:1px solid #ccc;padding:.2em .6em;
vertical-align:top;text-align:left}}img{{max-width:100%}}.note{{color:#555;font-size:.9em}}</style>
</head><body>
<h1>Class report: {_e(assignment)}</h1>
{f'<p><strong>{_e(note)}</strong></p>' if note else ''}
<p>{len(records) + len(missing)} students: {len(graded)} graded, {len(failed)} failed,
{len(missing)} missing. Mean automatic score of the graded: {mean:.2f} / {points(top)}.
Files: <a href="scores.csv">scores.csv</a> (one row per student, diagnoses per exercise),
<a href="diagnoses.csv">diagnoses.csv</a> (student, exercise, code),
<a href="grades.csv">grades.csv</a> (for an LMS: every student, automatic, hand and total).</p>
<p>{_e(variants_sentence(records))}</p>
{check_table}
{stopped_table}
{folded_table}
<h2>Exercises</h2>
<img src="scores.svg" alt="Histograms: how many students got each score, one per exercise">
<img src="diagnoses.svg" alt="{DIAGNOSES_ALT}">
{sections}
<h2>Hand grading</h2>
{_hand_section(records, marks, assignment, notebook)}
{failed_table}
{missing_part}
<h2>Late submissions</h2>
{late_table}
</body></html>
"""


def write_class_report(records: dict[str, dict], out_dir: Path, assignment: str, *,
                       marks: dict[str, dict] | None = None, missing: list[str] = (),
                       notebook: str = "attention", note: str = "") -> dict:
    """Write the report files; return their paths by name. `note` heads the report (how the
    run graded, when an instructor must know: --unsafe-no-isolation)."""
    marks = marks or {}
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "class report": out_dir / "class_report.html",
        "scores (CSV)": out_dir / "scores.csv",
        "diagnoses (CSV)": out_dir / "diagnoses.csv",
        "grades for an LMS (CSV)": out_dir / "grades.csv",
        "score histograms": out_dir / "scores.svg",
        "diagnosis chart": out_dir / "diagnoses.svg",
    }
    write_scores_csv(records, marks, paths["scores (CSV)"])
    write_diagnoses_csv(records, paths["diagnoses (CSV)"])
    write_grades_csv(records, marks, list(missing), paths["grades for an LMS (CSV)"])
    paths["score histograms"].write_text(score_histograms(score_counts(records)),
                                         encoding="utf-8")
    paths["diagnosis chart"].write_text(diagnosis_chart(diagnosis_bars(records), DIAGNOSES_ALT),
                                        encoding="utf-8")
    for name in OLD_PICTURES:
        (out_dir / name).unlink(missing_ok=True)
    page = _html(records, marks, list(missing), assignment, notebook, note)
    paths["class report"].write_text(page, encoding="utf-8")
    return paths

"""What a student reads about their grade: plain text per exercise, markdown for the summary.

Everything here is built from the engine's report (CONTRACT section 2): scores, test names,
student-facing messages and diagnosis codes. Nothing here reads a hidden test.
"""

from __future__ import annotations

import html
import textwrap

from autograder.exercises import EXERCISES

# Student-facing explanations of the diagnosis codes (CONTRACT section 3), keyed by the codes
# of `autograder.diagnoses.codes` (a test holds them to it); a code without one shows bare.
DIAGNOSIS_HINTS = {
    "no-scaling": "the scores are not divided by sqrt(d_k)",
    "wrong-scale": "the scores are scaled by the wrong factor (use sqrt(d_k), the key dimension)",
    "not-normalized": "the attention weights do not sum to 1 over the keys",
    "softmax-axis": "the softmax normalises over the queries instead of the keys (last axis)",
    "unstable-softmax": "the softmax overflows for large scores: subtract the row maximum first",
    "wrong-key": "the weight reported is the smaller key's, not the larger key's",
    "wrong-gradient": "the softmax derivative is wrong: d p_i / d z_i = p_i (1 - p_i)",
    "mask-ignored": "the mask has no effect",
    "mask-inverted": "True in the mask means 'masked out', not 'keep'",
    "mask-after-softmax": "masked weights are zeroed after the softmax without renormalising",
    "mask-zero-fill": "masked scores are set to 0 instead of a large negative number",
    "mask-none-broken": "attention fails or is wrong when mask=None",
    "transposed": "queries and keys are multiplied in the wrong orientation (try n != m)",
    "wrong-shape": "an output has the wrong shape",
    "returns-swapped": "attention returns (attn, out) instead of (out, attn)",
    "mutates-input": "the function modifies its inputs in place",
    "causal-diagonal": "causal_mask also masks the diagonal (a position may attend to itself)",
    "causal-wrong-triangle": "causal_mask masks the past instead of the future",
    "missing-name": "a required name is not defined",
    "syntax-error": "the code does not parse",
    "crashed": "the code raised an error or its process died",
    "timeout": "the code ran past its time limit",
    "memory-limit": "the code ran past its memory limit",
    "forbidden-import": "the code tried to import the reference solution or the grader",
}

def exercise_heading(exercise: str) -> str:
    """`Exercise 3: causal scaled dot-product attention`, or the key of an unknown exercise."""
    return EXERCISES[exercise].heading if exercise in EXERCISES else exercise


def _points(x: float) -> str:
    return f"{float(x):g}"


def diagnosis_line(code: str) -> str:
    hint = DIAGNOSIS_HINTS.get(code)
    return f"{code}: {hint}" if hint else code


def exercise_text(exercise: str, result: dict) -> str:
    """The plain-text message shown under a graded cell (its stdout)."""
    title = exercise_heading(exercise)
    lines = [f"{title}: {_points(result['score'])} / {_points(result['max_score'])} points"]
    diagnoses = result.get("diagnoses") or []
    if diagnoses:
        lines.append("What the grader noticed:")
        lines += [f"  - {diagnosis_line(code)}" for code in diagnoses]
    for test in result.get("tests") or []:
        mark = "ok  " if test.get("passed") else "FAIL"
        line = (f"  [{mark}] {test.get('name', '?')} "
                f"({_points(test.get('score', 0))}/{_points(test.get('max_score', 0))})")
        message = (test.get("message") or "").strip()
        if message and not test.get("passed"):
            line += ": " + " ".join(message.split())
        # wrapped: the feedback page shows outputs without wrapping long lines
        lines.append(textwrap.fill(line, width=96, subsequent_indent=" " * 9))
    return "\n".join(lines) + "\n"


def summary_markdown(report: dict, pending: list[tuple[str, float]]) -> str:
    """The summary cell put at the top of a student's feedback (markdown with an HTML table,
    so the columns keep their spacing in nbgrader's feedback page)."""
    cell = '<td style="padding: 3px 14px 3px 0; vertical-align: top">'
    rows = []
    for exercise, result in (report.get("exercises") or {}).items():
        title = html.escape(exercise_heading(exercise))
        noticed = "<br>".join(html.escape(diagnosis_line(c)) for c in result.get("diagnoses") or [])
        rows.append(f"<tr>{cell}{title}</td>{cell}{_points(result['score'])} / "
                    f"{_points(result['max_score'])}</td>{cell}{noticed or '—'}</td></tr>")
    for name, points in pending:
        rows.append(f"<tr>{cell}{html.escape(name)} (written answer)</td>{cell}pending / "
                    f"{_points(points)}</td>{cell}graded by hand, not yet marked</td></tr>")
    head = "".join(f'<th style="padding: 3px 14px 3px 0; text-align: left">{h}</th>'
                   for h in ("exercise", "score", "what the grader noticed"))
    lines = [
        "## Your results",
        "",
        f"<table><tr>{head}</tr>{''.join(rows)}</table>",
        "",
        f"**Automatically graded: {_points(report['score'])} / {_points(report['max_score'])}.**",
    ]
    if pending:
        total = sum(points for _, points in pending)
        lines.append(f"Written answers worth {_points(total)} points are still to be graded "
                     "by hand; they are not counted as zero.")
    lines += ["", "The hidden tests themselves are not shown; each message below says what went "
              "wrong and how to look into it."]
    return "\n".join(lines)

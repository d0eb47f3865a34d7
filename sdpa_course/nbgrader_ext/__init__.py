"""The kit's extensions to nbgrader, plugged in through its traitlets configuration.

Owns the configuration every course uses (`config.configure`, called by each course's
`nbgrader_config.py`) and what it plugs in: the course seed and the numbers key it writes into
the release (`variants`), the release's stubs that name their exercise (`clear_solutions`), the
engine in `Execute`'s slot of autograde (`autograde`), deleted graded cells put back
(`restore_cells`), exercise 4's score recorded as extra credit (`extra_credit`), the feedback
page's steps, redaction, exporter and template (`feedback_step`, `feedback_view`, `redact`,
`feedback_exporter`, `templates/`), what makes any page of a student's notebook safe
(`safe_notebook`, `student_html`: formgrader's too; `code_html`: one highlighter for its code;
`cell_budget`: how many cells a page shows, the rest folded into one notice), the outputs
the kit builds itself without nbformat's check of each one (`outputs`) and
`nbgrader export`'s plugin that lists every student (`export`).

May import: `sdpa_course.errors`, `sdpa_course.assignment`, `sdpa_course.engine_call`,
`sdpa_course.reports` (the wording of a grade), `autograder.exercises`,
`autograder.diagnoses.codes` and `autograder.variants`, plus nbgrader.
Not `course`, `grading`, `demo` or `cli`, which build on it.
"""

"""The kit's extensions to nbgrader, plugged in through its traitlets configuration.

Owns the configuration every course uses (`config.configure`, called by each course's
`nbgrader_config.py`) and what it plugs in: the release's stubs that name their exercise
(`clear_solutions`), the engine in `Execute`'s slot of autograde (`autograde`), deleted graded
cells put back (`restore_cells`), the feedback page's summary, redaction, exporter and
template (`feedback_summary`, `redact`, `feedback_exporter`, `templates/`).

May import: `sdpa_course.errors`, `sdpa_course.assignment`, `sdpa_course.engine_call`,
`sdpa_course.reports` (the wording of a grade) and `autograder.exercises`, plus nbgrader.
Not `course`, `grading`, `demo` or `cli`, which build on it.
"""

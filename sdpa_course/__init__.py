"""sdpa_course: the `sdpa-course` command line and the instructor workflow on nbgrader.

Packages by job, each importing only those listed before it (a test holds this order):

- `errors`, `assignment`: the kit's errors and the assignment's names; they import nothing.
  `deferred_imports`: start-up time spent on imports (what `cli` does before nbgrader loads).
- `engine_call`: calling the grading engine (`autograder.engine`) and checking its report.
- `reports/`: the wording of a grade, each student's record, the class report (no nbgrader).
- `nbgrader_ext/`: what the kit plugs into nbgrader (config, preprocessors, feedback page).
- `course/`: the notebooks' build, the course directory, `init` and `release`.
- `grading/`: `sdpa-course grade`, the class pipeline into nbgrader's gradebook.
- `platforms/`: `sdpa-course autograder`, graders for Gradescope and PrairieLearn.
- `demo`, then `cli` on top; nothing imports `cli`.
"""

__version__ = "0.1.0"

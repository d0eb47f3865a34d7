"""What a grading run leaves for people to read, made from plain data.

Owns the student-facing wording of a grade (`feedback_text`: the text under each graded
cell and the summary table of the feedback page), each student's result kept on disk under
`reports/<assignment>/results/` (`records`: what a rerun resumes from and `--json` prints)
and the class report (`class_report`: CSV, charts, one HTML page).

May import: `sdpa_course.errors`, `sdpa_course.assignment`, and `autograder`'s tables of
exercises and diagnosis codes. Nothing else of the kit, and not nbgrader: these modules turn
dicts (the engine's report, the records) into text and files.
"""

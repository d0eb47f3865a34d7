"""What a grading run leaves for people to read, made from plain data.

Owns the student-facing wording of a grade (`feedback_text`: the text under each graded
cell, the summary and each exercise's results on the feedback page), each student's result
kept on disk under `reports/<assignment>/results/` (`records`: what a rerun resumes from and
`--json` prints), the class report and the CSV exports (`class_report`: CSV, one HTML
page; `charts`: its two pictures, as SVG), the causal heatmap of a feedback page (`heatmap`:
SVG and a table, from the weights in the engine's report) and what makes student text safe
in a terminal or a spreadsheet (`safe_text`).

May import: `sdpa_course.errors`, `sdpa_course.assignment`, and `autograder`'s tables of
exercises and diagnosis codes. Nothing else of the kit, and not nbgrader: these modules turn
dicts (the engine's report, the records) into text and files.
"""

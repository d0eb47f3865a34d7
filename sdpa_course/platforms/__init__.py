"""Grading where courses already grade: autograders for Gradescope and PrairieLearn.

`sdpa-course autograder PLATFORM`, run in a course, writes what the platform takes: one
module per platform (`gradescope`: the zip of Gradescope's autograder specification;
`prairielearn`: a question with its external grader and the grader's image), each with the
build (`build`) and the grader the platform runs per submission (`run`, in its container).
They share `runner` (grade one submission as a student, isolation chosen or refused, results
per hidden test), `install` (the kit's wheel, its dependencies pinned to the tested versions,
`setup.sh`) and `course_parts` (the course's seed, release and hand-graded questions).

May import: `sdpa_course.errors`, `sdpa_course.assignment`, `sdpa_course.engine_call`,
`sdpa_course.reports` (a diagnosis's wording), `sdpa_course.nbgrader_ext` and
`sdpa_course.course` (the course it is built from), and `autograder`. Not `grading`, `demo`
or `cli`. The grader's modules (`runner`, `gradescope`, `prairielearn`) import nbgrader only
to build, never to grade.
"""

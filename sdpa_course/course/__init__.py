"""The course itself: the notebooks and the course directory they are released from.

Owns building the generated notebooks from their jupytext source (`notebooks`), where the
kit's material lies once installed (`material`), an nbgrader course directory opened
in-process (`directory`), and the `init` and `release` commands (`create`, `release`).

May import: `sdpa_course.errors`, `sdpa_course.assignment` and `sdpa_course.nbgrader_ext`
(the release's stubs). Not `grading`, `reports`, `demo` or `cli`, which build on it.
"""

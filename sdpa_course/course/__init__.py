"""The course itself: the notebooks and the course directory they are released from.

Owns building the generated notebooks from their jupytext source (`notebooks`), where the
kit's material lies once installed (`material`), an nbgrader course directory opened
in-process with its seed's variants (`directory`), and the `init`, `release` and `variant`
commands (`create`, `release`, `variants`).

May import: `sdpa_course.errors`, `sdpa_course.assignment`, `sdpa_course.nbgrader_ext`
(the release's stubs, the course seed) and `autograder.variants`; it needs nothing of
`reports`. Not `grading`, `demo` or `cli`, which build on it.
"""

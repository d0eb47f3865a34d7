"""Grading a whole class into nbgrader's gradebook: the pipeline behind `sdpa-course grade`.

Owns, in pipeline order (`grade` holds the order in one place): finding the submissions and
checking each is this assignment's notebook (`submissions`); each student's variant, from
the folder's id, and the check that the release still matches the seed (`variants`);
nbgrader's sanitising pass, then
its autograding pass with the engine's scores, into one shared gradebook connection
(`recording`, `gradebook`, `nbgrader_speedups`), and each student's feedback page
(`feedback`, regenerated when the hand marks that `hand_marks` reads from the gradebook
change); the engine run in local worker processes (`workers`) or on a Dask cluster
(`dask_executor` on the instructor's side, `dask_worker` on each worker, `kit_version` to
refuse a worker with another kit); the progress line (`progress`); one run at a time per
course (`run_lock`).

May import: `sdpa_course.errors`, `sdpa_course.assignment`, `sdpa_course.engine_call`,
`sdpa_course.course`, `sdpa_course.nbgrader_ext`, `sdpa_course.reports`, `autograder` (the
engine) and `sdpa_ref` (`kit_version` hashes it). Not `demo` or `cli`, which call it.
"""

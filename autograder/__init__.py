"""autograder: the hidden suites and the sandboxed grading engine.

The grading (trusted) process does little numerical work of its own: the reference on a few
rows, the suites' comparisons. It runs it on one BLAS thread, set here before numpy loads
(an instructor's own setting is kept): more threads would spin between calls, burning the
processor that a submission graded beside it needs (measured: 170 ms of CPU per answer key
instead of 27). Student code runs on one BLAS thread too (`sandbox.pool`).
"""

import os

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                         "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")

for _name in BLAS_THREAD_VARIABLES:
    os.environ.setdefault(_name, "1")

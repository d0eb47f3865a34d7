"""The names the kit gives its one assignment in nbgrader, declared once.

`sdpa/attention.ipynb` is the assignment and its notebook, under `source/`, `release/`,
`submitted/<student>/`, `autograded/<student>/` and `feedback/<student>/` alike; `sdpa_course`
is the kit's key in a notebook's metadata (the engine's report in an autograded notebook, the
build note in a generated one). At the bottom of `sdpa_course` with `errors`: it imports nothing.
"""

ASSIGNMENT = "sdpa"
NOTEBOOK = "attention"
METADATA_KEY = "sdpa_course"

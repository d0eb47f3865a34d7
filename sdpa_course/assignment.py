"""The names the kit gives its one assignment in nbgrader, declared once.

`sdpa/attention.ipynb` is the assignment and its notebook, under `source/`, `release/`,
`submitted/<student>/`, `autograded/<student>/` and `feedback/<student>/` alike; `sdpa_course`
is the kit's key in a notebook's metadata (the engine's report in an autograded notebook, the
build note in a generated one). `your_numbers` is the grade_id of the notebook's locked cell that
works out each student's numbers (`sdpa-course release` writes the course's key into it).
`nbgrader_config.py` makes a folder a course directory, and the kit's checkout builds its
notebooks from `source/sdpa/attention.py`: the command line tells a wrong path by these names
before it imports anything heavy. At the bottom of `sdpa_course` with `errors`: it imports nothing.
"""

ASSIGNMENT = "sdpa"
NOTEBOOK = "attention"
METADATA_KEY = "sdpa_course"
REPORTS_DIRECTORY = "reports"  # reports/<assignment>/ in the course: the kit's records and report
NUMBERS_CELL = "your_numbers"
TEXT_SOURCE = f"source/{ASSIGNMENT}/{NOTEBOOK}.py"  # in the kit's checkout: `build` reads it
NO_TEXT_SOURCE = ("no notebook text source at {path}: run this in the kit's checkout "
                  "(or pass --root)")
COURSE_CONFIG = "nbgrader_config.py"  # what makes a folder a course directory
NOT_A_COURSE = ("{root} is not a course directory (no " + COURSE_CONFIG + "); create one with "
                "`sdpa-course init DIR`")

"""sdpa_course: the `sdpa-course` command line and the instructor workflow on nbgrader."""

__version__ = "0.1.0"

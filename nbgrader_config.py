"""nbgrader configuration for the course directory at the repository root.

`sdpa-course init DIR` writes the same file into a new course directory. Every setting lives
in `sdpa_course.nbgrader_ext.config`.
"""

from sdpa_course.nbgrader_ext.config import configure

c = get_config()  # noqa: F821 -- provided by nbgrader when it loads this file
c.CourseDirectory.course_id = "sdpa-course"
configure(c)
# Do not set CourseDirectory.assignment_id here: nbgrader then refuses an assignment on the
# command line ("cannot both be specified in config and as an argument").

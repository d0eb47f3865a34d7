"""The hidden suites: one module per exercise, run in the trusted process.

Each test takes the `student` fixture (an `autograder.student.Student`), is marked with its
exercise (`pytest.mark.ex1`...) and its points (`pytest.mark.points(n)`), and compares the
student's results with `sdpa_ref`. `autograder.runner` runs them fast, without pytest (its
marks only: `marks`); `pytest autograder/suites --submission PATH` runs them with pytest.
"""

SUITE_MODULES = ("test_ex1", "test_ex2", "test_ex3", "test_ex4")

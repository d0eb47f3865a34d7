"""Run the hidden suites with pytest against one submission:

    pytest autograder/suites --submission path/to/attention.ipynb [-m ex3]

The submission runs in one sandbox for the whole session; each test gets the `student`
fixture, exactly as `autograder.runner` gives it. Without --submission every test is skipped.
"""

import pytest

from autograder.sandbox import Cell, Sandbox
from autograder.student import Student
from autograder.submission import read_submission


def pytest_addoption(parser):
    parser.addoption("--submission", default=None,
                     help="the .ipynb or .py submission the hidden suites grade")


@pytest.fixture(scope="session")
def _sandbox(request):
    path = request.config.getoption("--submission")
    if path is None:
        pytest.skip("no submission given: pass --submission PATH")
    cells = [Cell(c.source, c.label, c.first_line) for c in read_submission(path)]
    with Sandbox(cells) as sandbox:
        sandbox.start()
        yield sandbox


@pytest.fixture
def student(_sandbox):
    return Student(_sandbox)

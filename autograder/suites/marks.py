"""`MARKS_ONLY`: a stand-in for pytest that has its `mark` and nothing else, for the runner.

The hidden suites are pytest modules, but all they take from pytest is `pytest.mark`
(`pytestmark = pytest.mark.ex3`, `@pytest.mark.points(1)`), which the runner reads back as
records with a `name` and `args` (`autograder.runner`). Importing pytest cost about a tenth
of a second of CPU at every `sdpa-course check`, most of a warm check's own work; where
pytest is not already imported, the runner imports the suites with this module standing in
for it. Under pytest (`pytest autograder/suites --submission PATH`) the suites get the real
one, whose marks read the same. A test holds the two collections equal.
"""

from __future__ import annotations

import types


class Mark:
    """`pytest.mark.NAME(*args)`: applied to a function, it is appended to its `pytestmark`."""

    def __init__(self, name: str, args: tuple = ()):
        self.name, self.args = name, tuple(args)

    def __call__(self, *args):
        if len(args) == 1 and callable(args[0]):  # @pytest.mark.NAME(...): as pytest decides
            function = args[0]
            function.pytestmark = [*getattr(function, "pytestmark", []), self]
            return function
        return Mark(self.name, self.args + args)


class _MarkGenerator:
    def __getattr__(self, name: str) -> Mark:
        if name.startswith("_"):
            raise AttributeError(name)
        return Mark(name)


MARKS_ONLY = types.ModuleType("pytest", "pytest's marks only (autograder.suites.marks)")
MARKS_ONLY.mark = _MarkGenerator()

"""ClearSolutions with stubs that name their exercise.

nbgrader replaces every solution region by one fixed stub. Here the stub depends on the cell:
the exercise comes from the cell's grade_id prefix (`ex3_attention` -> "Exercise 3"), and

* a region inside a function body becomes a `raise NotImplementedError("Exercise 3: ...")`
  naming the function, so calling an unwritten function fails clearly;
* a region at the top level that only assigns names (the numeric answers) becomes one
  `name = ...` line per name, so Run All keeps going and the self-check reports the answer as
  "not answered yet".
"""

from __future__ import annotations

import ast
import re
import textwrap

from nbgrader.preprocessors import ClearSolutions
from traitlets import Unicode

from autograder.exercises import exercise_key, exercise_label
from sdpa_course.assignment import METADATA_KEY

_FUNCTION_HEADER = re.compile(r"^(\s*)def\s+(\w+)\s*\(")


def _enclosing_function(lines_before: list[str], indent: str) -> str | None:
    """Name of the nearest `def` above the region that is less indented than the region."""
    for line in reversed(lines_before):
        match = _FUNCTION_HEADER.match(line)
        if match and len(match.group(1)) < len(indent):
            return match.group(2)
    return None


def _assigned_names(region: str) -> list[str] | None:
    """Names assigned by a region made only of `name = ...` statements, else None."""
    try:
        tree = ast.parse(textwrap.dedent(region))
    except SyntaxError:
        return None
    names: list[str] = []
    for statement in tree.body:
        if not isinstance(statement, ast.Assign | ast.AnnAssign):
            return None
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            if not isinstance(target, ast.Name):
                return None
            if target.id not in names:
                names.append(target.id)
    return names or None


class ExerciseClearSolutions(ClearSolutions):
    """Replace solution regions by stubs that say which exercise they belong to."""

    function_stub = Unicode(
        '# YOUR CODE HERE\nraise NotImplementedError("{exercise}: write {function}() here")',
        help="Stub for a solution region inside a function; {exercise} and {function} are "
        "filled in.",
    ).tag(config=True)

    code_cell_stub = Unicode(
        '# YOUR CODE HERE\nraise NotImplementedError("{exercise}: your code goes here")',
        help="Stub for any other code solution region; {exercise} is filled in.",
    ).tag(config=True)

    answer_stub = Unicode(
        "{name} = ...  # YOUR ANSWER HERE ({exercise})",
        help="Stub line for each name a top-level answer region assigns; {name} and {exercise} "
        "are filled in.",
    ).tag(config=True)

    def preprocess(self, nb, resources):
        nb, resources = super().preprocess(nb, resources)
        # The build note of the source notebook ("edit the .py and rebuild") is for instructors.
        nb.metadata.pop(METADATA_KEY, None)
        return nb, resources

    def preprocess_cell(self, cell, resources, cell_index):
        key = exercise_key(cell.metadata.get("nbgrader", {}).get("grade_id"))
        language = resources["language"]
        if cell.cell_type != "code" or key is None or language != "python":
            return super().preprocess_cell(cell, resources, cell_index)
        exercise = exercise_label(key)  # `ex3_attention` -> `ex3` -> "Exercise 3"
        # nbgrader uses one stub per language for every region; swap in this cell's own stub
        # for the duration of the call, then put the configured one back.
        configured = self.code_stub
        self.code_stub = {**configured, language: self._stub_for(cell.source, exercise)}
        try:
            return super().preprocess_cell(cell, resources, cell_index)
        finally:
            self.code_stub = configured

    def _stub_for(self, source: str, exercise: str) -> str:
        lines = source.split("\n")
        begins = [i for i, line in enumerate(lines) if self.begin_solution_delimeter in line]
        ends = [i for i, line in enumerate(lines) if self.end_solution_delimeter in line]
        if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
            # Whole-cell solutions, several regions or malformed ones: the generic stub (and
            # nbgrader's own error reporting for malformed regions).
            return self.code_cell_stub.format(exercise=exercise)
        begin, end = begins[0], ends[0]
        indent = re.match(r"\s*", lines[begin]).group(0)
        if indent:
            function = _enclosing_function(lines[:begin], indent)
            if function is not None:
                return self.function_stub.format(exercise=exercise, function=function)
            return self.code_cell_stub.format(exercise=exercise)
        names = _assigned_names("\n".join(lines[begin + 1 : end]))
        if names is None:
            return self.code_cell_stub.format(exercise=exercise)
        return "\n".join(self.answer_stub.format(name=name, exercise=exercise) for name in names)

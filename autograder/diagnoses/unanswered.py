"""Answers left as the release has them: `not-answered`, never `missing-name` or `crashed`.

The release's answer cells hold stubs (`sdpa_course.nbgrader_ext.clear_solutions`): for a
number `p_scaled = ...  # YOUR ANSWER HERE (Exercise 2)`, for a function a body that only
raises `NotImplementedError("Exercise 3: write attention() here")`. A failed test is *not
answered* when both of these hold:

- the text says so: the submission's last top-level statement that binds the name is still
  the release's stub form, read from its syntax tree (comments, blank lines, a docstring or
  a renamed argument do not count; any other code does: an `if` around it, a real body, a
  `raise` that computes its message);
- the failure is the stub's own: the value is `...` itself, or the call raised
  `NotImplementedError` in the stub's raise statement (its cell and line).

So a real attempt is graded as one (a function that raises NotImplementedError on one branch,
or calls an unanswered function of another exercise, is `crashed`), and a stub cannot hide
what the code does: it has no code to hide it in. A cell that failed only because it called an
unanswered stub (a scratch cell trying `attention(...)`) is not-answered too.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from autograder.exercises import NAME_TO_EXERCISE

CODE = "not-answered"
_PARSE_LIMIT = 200_000  # characters of a cell read for its stubs, as `modules.defined_names`
_PARSE_BUDGET = 2_000_000  # characters of all cells parsed: the rest are read as attempts
# A cell's error as the sandbox words it: `NotImplementedError: Exercise 3: write attention()
# here (line 4)`; the release's stub message names the function it stands for.
_STUB_ERROR = re.compile(r"NotImplementedError: Exercise \d+: write (\w{1,100})\(\) here\b")


def _is_stub_raise(statement: ast.stmt) -> bool:
    """`raise NotImplementedError`, `raise NotImplementedError()` or with one string."""
    if not isinstance(statement, ast.Raise) or statement.cause is not None:
        return False
    exc = statement.exc
    if isinstance(exc, ast.Name):
        return exc.id == "NotImplementedError"
    return (isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name)
            and exc.func.id == "NotImplementedError" and not exc.keywords
            and (not exc.args or (len(exc.args) == 1 and isinstance(exc.args[0], ast.Constant)
                                  and isinstance(exc.args[0].value, str))))


def _stub_function_line(node: ast.stmt) -> int | None:
    """The line of the lone `raise NotImplementedError(...)` of a stub function, else None."""
    if not isinstance(node, ast.FunctionDef) or node.decorator_list:
        return None
    body = node.body
    if (len(body) == 2 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        body = body[1:]  # the docstring
    return body[0].lineno if len(body) == 1 and _is_stub_raise(body[0]) else None


def _is_stub_value(node: ast.stmt) -> str | None:
    """The name of `name = ...` (one plain name, the Ellipsis itself), else None."""
    if (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant)
            and node.value.value is Ellipsis):
        return node.targets[0].id
    return None


def _bound_names(node: ast.stmt) -> set[str]:
    """Every name a statement may bind, at any depth (an `if` around a def binds it too)."""
    names = set()
    for child in ast.walk(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(child.name)
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.add(child.id)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            names |= {alias.asname or alias.name.split(".")[0] for alias in child.names}
        elif isinstance(child, (ast.Global, ast.Nonlocal)):
            names |= set(child.names)
    return names


def stubs(cells) -> dict[str, tuple[str, int | None]]:
    """Required name -> (its cell's label, its stub's raise line; None for `name = ...`), for
    each name whose last binding in the submission is still the release's stub."""
    last: dict[str, tuple[str, int | None] | None] = {}
    budget = _PARSE_BUDGET
    for cell in cells:
        if getattr(cell, "locked", False):
            continue  # the kit's own cells bind no answer
        tree = None
        if len(cell.source) <= min(_PARSE_LIMIT, budget):
            budget -= len(cell.source)
            try:
                tree = ast.parse(cell.source)
            except Exception:  # noqa: BLE001 - SyntaxError, RecursionError...: unread
                tree = None
        if tree is None:  # a cell not read is no stub: each answer it names is an attempt
            last.update(dict.fromkeys(
                (name for name in NAME_TO_EXERCISE if name in cell.source), None))
            continue
        for node in tree.body:
            line = _stub_function_line(node)
            if line is not None and node.name in NAME_TO_EXERCISE:
                last[node.name] = (cell.label, line + cell.first_line - 1)
                continue
            name = _is_stub_value(node)
            if name in NAME_TO_EXERCISE:
                last[name] = (cell.label, None)
                continue
            for bound in _bound_names(node) & NAME_TO_EXERCISE.keys():
                last[bound] = None  # written, or at least touched: an attempt
    return {name: where for name, where in last.items() if where is not None}


def _failed_in_stub(result, found: dict[str, tuple[str, int | None]]) -> str | None:
    """The stub name that explains this failed test, if its failure is the stub's own."""
    name = result.missing_name or result.target
    if name not in found:
        return None
    label, line = found[name]
    if line is None:  # `name = ...`: the value the test read is the Ellipsis itself
        return name if result.ellipsis else None
    raised_here = f"{label}, line {line}" == result.error_where
    return name if result.error_type == "NotImplementedError" and raised_here else None


def mark(results, cells) -> list:
    """The results, each failure that an unanswered stub explains given `not-answered` and a
    message that says so instead of "failed" or "not defined". The cells are parsed for
    their stubs only when a test failed: a full-marks submission is not parsed at all."""
    if all(result.passed or result.kit_error for result in results):
        return list(results)
    found = stubs(cells)
    marked = []
    for result in results:
        name = None if result.passed or result.kit_error else _failed_in_stub(result, found)
        if name is None:
            marked.append(result)
            continue
        how = ("it is still `...`" if found[name][1] is None else
               "it still raises NotImplementedError, as the notebook was handed out")
        message = f"{name} is not answered yet: {how}"
        marked.append(replace(result, diagnoses=(CODE,), message=message, problem=message,
                              hint="", raised=False))
    return marked


def stub_raised(outcomes) -> bool:
    """Whether a cell's error reads as a release stub's NotImplementedError: only then are
    the cells parsed for their stubs (`cell_not_answered`), which costs milliseconds."""
    return any(_STUB_ERROR.match(getattr(outcome, "error", "") or "") for outcome in outcomes)


def cell_not_answered(error: str, found: dict[str, tuple[str, int | None]]) -> bool:
    """A cell's error that is an unanswered stub's NotImplementedError, raised by calling it."""
    match = _STUB_ERROR.match(error or "")
    return bool(match) and found.get(match.group(1), ("", None))[1] is not None

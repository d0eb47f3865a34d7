"""Modules a submission needs that the grader does not have (it has numpy and matplotlib).

A submission written with scipy or torch loses the names that depended on them where they
are not installed. Which names those are is read from how its cells and calls failed: a
ModuleNotFoundError, or a NameError for a name that a failed import (or a cell that failed
because of one) would have defined, such as `scipy_softmax` in
`from scipy.special import softmax as scipy_softmax`.
"""

from __future__ import annotations

import ast
import re

from autograder.exercises import NAME_TO_EXERCISE

AVAILABLE = "numpy and matplotlib"
# The reference and the grader are refused, not missing (diagnosis forbidden-import).
_REFUSED = frozenset({"sdpa_ref", "autograder", "sdpa_course"})
_NO_MODULE = re.compile(r"No module named '([A-Za-z_][A-Za-z0-9_.]{0,99})'")
_NOT_DEFINED = re.compile(r"name '([A-Za-z_][A-Za-z0-9_]{0,99})' is not defined")
_PARSE_LIMIT = 200_000  # characters of a failed cell read for the names it defines


def missing_module(text: str) -> str | None:
    """The top-level module in "No module named 'scipy.special'" (scipy), if any."""
    found = _NO_MODULE.search(text[:2000])
    if not found:
        return None
    module = found.group(1).split(".")[0]
    return None if module in _REFUSED else module


def _undefined_name(text: str) -> str | None:
    found = _NOT_DEFINED.search(text[:2000])
    return found.group(1) if found else None


def defined_names(source: str) -> set[str]:
    """Names the top-level statements of `source` define; none if it does not parse."""
    if len(source) > _PARSE_LIMIT:
        return set()
    try:
        tree = ast.parse(source)
    except Exception:  # noqa: BLE001 - SyntaxError, RecursionError...: it defined nothing
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def find_missing_modules(cells, outcomes, results) -> dict[str, list[str]]:
    """Module -> the required names (CONTRACT section 1) that failed because it is missing.

    cells: the submission's cells; outcomes: how each ran; results: the tests' results.
    """
    by_label = {cell.label: cell for cell in cells}
    needs: dict[str, str] = {}  # a name some failed cell would have defined -> its module
    for outcome in outcomes:
        if outcome.status != "error":
            continue
        module = missing_module(outcome.error) or needs.get(
            _undefined_name(outcome.error) or "")
        cell = by_label.get(outcome.label)
        if module and cell is not None:
            needs.update(dict.fromkeys(defined_names(cell.source), module))
    found: dict[str, list[str]] = {}
    for result in results:
        if result.passed:
            continue
        module, name = None, result.missing_name or result.target
        if result.error_type == "ModuleNotFoundError":
            module = missing_module(result.error_message)
        elif result.error_type == "NameError":
            module = needs.get(_undefined_name(result.error_message) or "")
        elif result.missing_name:
            module = needs.get(result.missing_name)
        if module and name in NAME_TO_EXERCISE and name not in found.get(module, []):
            found.setdefault(module, []).append(name)
    order = list(NAME_TO_EXERCISE)
    return {module: sorted(names, key=order.index) for module, names in found.items()}


def explain(name: str, module: str) -> str:
    """The message for a test that failed because `name` needs the missing `module`."""
    return (f"{name} needs {module}, which is not installed where your work is graded "
            f"(only {AVAILABLE} are): write it with numpy")


def note(missing: dict[str, list[str]]) -> list[str]:
    """One line per missing module, for the report's notes."""
    return [f"{module} is not installed where your work is graded (only {AVAILABLE} are), "
            f"so {_listed(names)} could not be graded: write "
            f"{'it' if len(names) == 1 else 'them'} with numpy"
            for module, names in missing.items()]


def _listed(names) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

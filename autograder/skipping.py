"""Which of a submission's cells grading leaves out: the lesson's demonstrations and
self-checks, which no grade depends on (issue 30).

A cell is left out only when the kit itself knows it as such: its grade_id is one of the
release's tagged cells (`lesson_cells.SKIPPABLE`, written by `sdpa-course build` from the
notebook's source) AND its source is exactly the release's text (by SHA-256). Tags and locks
in the notebook's metadata are the student's to edit and decide nothing here; a student's
edited copy of a locked cell, and every statement of a `.py` file, run as the student's code.

A skipped cell must never change a grade, so a tagged cell is run after all when any name it
defines (assigns, imports, defines, deletes, anywhere in it) is read by a cell that runs, at
any place in the notebook (a function defined earlier may read it when the grader calls it),
or by the grader itself (the exercises' names, the notebook's shown numbers); and nothing is
skipped from a notebook whose running code reaches names dynamically (`globals()`, `eval`...).
The same check holds the lesson itself (`lesson_problems`, at build time and in the tests).
Everything here is linear in the cells' size (one `ast` walk per cell); student source that
does not parse never runs, and reads nothing.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from dataclasses import dataclass

from autograder.exercises import NAME_TO_EXERCISE
from autograder.lesson_cells import SKIPPABLE

DEMO, SELF_CHECK = "demo", "self-check"  # the tags of `source/sdpa/attention.py`
# What the trusted side reads from a submission's namespace after its cells ran: the
# exercises' names and the numbers the notebook shows (`variants.shown`, which imports numpy:
# not imported here, before `check` starts its sandbox; a test holds the two equal).
GRADER_READS = frozenset(NAME_TO_EXERCISE) | {"YOUR_VARIANT", "EX1", "EX2"}
# What reaches the notebook's globals by a computed string, beyond any static reading:
# `eval`, `exec` and IPython's namespace; `globals()`, `locals()` and `vars()` unless read
# at a constant key (`globals().get("X")`, `"X" in globals()`: a read of X); a module's
# `__dict__`, a frame's or function's globals; the `__main__` module.
EVALUATORS = frozenset({"eval", "exec", "get_ipython"})
NAMESPACES = frozenset({"globals", "locals", "vars"})
NAMESPACE_ATTRIBUTES = frozenset({"__dict__", "__globals__", "f_globals", "f_locals",
                                  "user_ns"})
# Text without any of these words has no dynamic access: it is not even parsed.
DYNAMIC_WORDS = EVALUATORS | NAMESPACES | NAMESPACE_ATTRIBUTES | {"__main__"}


def source_digest(source: str) -> str:
    """The SHA-256 of a cell's source, as `lesson_cells.SKIPPABLE` keeps it."""
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Names:
    """What one cell's code binds and reads, over-approximated (both err towards running)."""

    defines: frozenset[str]
    reads: frozenset[str]
    dynamic: bool  # it reads names by string: anything may be read


def _module_bindings(tree: ast.Module) -> set[str]:
    """The names a cell binds in the notebook's namespace: its module-level assignments,
    definitions and imports (not a function's locals), `global` declarations anywhere, and
    walrus targets outside functions."""
    bound: set[str] = set()
    stack: list[tuple[ast.AST, bool]] = [(tree, True)]  # (node, at module level)
    while stack:
        node, top = stack.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and top:
            bound.add(node.id)
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name) and top:
            bound.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and top:
            bound.update((alias.asname or alias.name).partition(".")[0] for alias in node.names)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and top:
            bound.add(node.name)
        inner = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                              ast.ClassDef, ast.Lambda, ast.ListComp,
                                              ast.SetComp, ast.DictComp, ast.GeneratorExp))
        # (a walrus in a decorator or default would bind at module level: no lesson has one)
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return bound


def _constant_key(node: ast.AST, parents: dict) -> bool:
    """Whether the namespace call `node` (`globals()`) is only read at a constant key."""
    parent = parents.get(node)
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return isinstance(parent.slice, ast.Constant)
    if isinstance(parent, ast.Attribute) and parent.attr == "get":
        call = parents.get(parent)
        return (isinstance(call, ast.Call) and call.func is parent and bool(call.args)
                and isinstance(call.args[0], ast.Constant))
    if isinstance(parent, ast.Compare) and parent.comparators == [node]:
        return isinstance(parent.left, ast.Constant) and isinstance(
            parent.ops[0], (ast.In, ast.NotIn))
    return False


def _dynamic(node: ast.AST, parents: dict) -> bool:
    if isinstance(node, ast.Name) and node.id in EVALUATORS:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in NAMESPACES:
        return not _constant_key(node, parents)
    if isinstance(node, ast.Attribute):
        return node.attr in NAMESPACE_ATTRIBUTES
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any(alias.name == "__main__" for alias in node.names) or \
            getattr(node, "module", None) == "__main__"
    if isinstance(node, ast.Constant) and node.value == "__main__":
        return isinstance(parents.get(node), (ast.Subscript, ast.Call))  # sys.modules[...]
    return False


def _parsed(source: str) -> ast.Module | bool:
    """The cell's syntax tree; False when it never compiles (so never runs: it reads
    nothing), True when it is too much for this parser (it may read anything)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    except (RecursionError, MemoryError):
        return True


def _reads(tree: ast.Module) -> tuple[frozenset[str], bool]:
    """The names a parsed cell reads, and whether it reaches names dynamically."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    reads, dynamic = set(), False
    for node in parents:  # every node but the module itself, which reads nothing
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Load, ast.Del)):
            reads.add(node.id)  # `del x` needs x too
        elif isinstance(node, ast.Attribute):
            reads.add(node.attr)  # `module.x`: counted as reading x
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.isidentifier():
            reads.add(node.value)  # getattr(obj, "x"), globals().get("x")
        dynamic = dynamic or _dynamic(node, parents)
    return frozenset(reads), dynamic


def cell_names(source: str) -> Names:
    tree = _parsed(source)
    if isinstance(tree, bool):
        return Names(frozenset(), frozenset(), tree)
    reads, dynamic = _reads(tree)
    return Names(frozenset(_module_bindings(tree)), reads, dynamic)


def _known(grade_id: str | None) -> tuple | None:
    return SKIPPABLE.get(grade_id or "")


def tag_of(grade_id: str | None, source: str) -> str | None:
    """The lesson's tag of a cell the kit knows as released ("demo", "self-check"), or None
    when its grade_id is not a tagged cell's or its source is not exactly the release's."""
    known = _known(grade_id)
    return known[0] if known and source_digest(source) == known[1] else None


@functools.lru_cache(maxsize=256)
def _cached_reads(source: str) -> tuple[frozenset[str], bool]:
    """What a cell that runs reads, and whether dynamically (`cell_names` without what it
    binds, which `split` does not need: half the time), once per source in a grading process
    (the lesson's cells repeat)."""
    tree = _parsed(source)
    return (frozenset(), tree) if isinstance(tree, bool) else _reads(tree)


def kept_anyway(candidates: dict[int, frozenset[str]], sources: list[str]) -> dict[int, str]:
    """Of the cells `candidates` (index into `sources` -> the names the cell binds), those that
    must run after all, each with why: a name it binds is read by a cell that runs, anywhere
    in the notebook, or by the grader; every one when a cell that runs reaches names
    dynamically. A cell whose text holds none of those names nor any word of dynamic access
    reads none of them: only the others are parsed (a submission's time is mostly this)."""
    bound = frozenset().union(*candidates.values()) if candidates else frozenset()
    words = bound | DYNAMIC_WORDS
    read = set(GRADER_READS)
    for index, source in enumerate(sources):
        if index in candidates or not any(word in source for word in words):
            continue
        reads, dynamic = _cached_reads(source)
        if dynamic:
            return {i: "a cell that runs reaches names dynamically" for i in candidates}
        read |= reads & bound
    kept = {}
    for index, defines in candidates.items():
        needed = sorted(defines & read)
        if needed:
            kept[index] = f"it defines {', '.join(needed[:5])}, which code that runs reads"
    return kept


def lesson_problems(cells: list[tuple[str | None, str, str | None]]) -> list[str]:
    """What stops the lesson's tagged cells from being skipped: `cells` are the notebook's code
    cells as (grade_id, source, tag); one line per tagged cell that must run after all."""
    candidates = {i: cell_names(source).defines for i, (_, source, tag) in enumerate(cells)
                  if tag in (DEMO, SELF_CHECK)}
    kept = kept_anyway(candidates, [source for _, source, _ in cells])
    return [f"{cells[i][0] or f'code cell {i + 1}'} is tagged {cells[i][2]!r} but cannot be "
            f"skipped: {why}" for i, why in sorted(kept.items())]


def split(cells: list) -> tuple[list, list]:
    """The submission's cells (`SubmittedCell`) as (those that run, those left out): the
    lesson's tagged cells as released, unless a cell that runs or the grader needs them. The
    names a tagged cell binds are the kit's record (`lesson_cells`), not parsed again."""
    candidates = {i: frozenset(_known(cell.grade_id)[2]) for i, cell in enumerate(cells)
                  if cell.lesson_tag}
    kept = kept_anyway(candidates, [cell.source for cell in cells])
    left_out = {i for i in candidates if i not in kept}
    return ([cell for i, cell in enumerate(cells) if i not in left_out],
            [cell for i, cell in enumerate(cells) if i in left_out])

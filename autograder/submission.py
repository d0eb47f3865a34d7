"""Read a submission into the cells the sandbox runs, in order.

A notebook gives all its code cells, in order, as the student wrote them (IPython magics are
rewritten to plain Python here, in the trusted process). A `.py` file gives its top-level
statements, each with its line, so that one failing statement does not hide the others; a
`.py` file that does not parse is passed on whole and the sandbox reports the syntax error.

Nothing here executes student code: `json.loads` and `ast.parse` only read it. Every step is
linear in the size of the submission, which is capped (`MAX_SUBMISSION_BYTES`); so is the
text given to IPython's magic transformer (`MAX_MAGIC_CHARS` per submission).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from autograder.exercises import EXERCISES, GRADED_CELL_IDS
from autograder.skipping import tag_of

# nbformat takes about a second to import; a notebook is plain JSON and is read as such.

MAX_SUBMISSION_BYTES = 32 * 2**20  # a notebook with pictures is a few MB
MAX_MAGIC_CHARS = 2**18  # cells given to IPython's transformer, per submission (~3 s at worst)
# A line that may hold IPython syntax: `%magic`, `!cmd`, `x = %magic`, `x = !cmd`, `obj?`.
# Only spaces and tabs are repeated, never across lines, so that no text makes it backtrack:
# `\s*` here took 9 s on 40,000 empty lines.
_MAGIC_LINE = re.compile(r"^[ \t]*[%!]|=[ \t]*[%!]|\?[ \t\r]*$", re.MULTILINE)
_TRANSFORM_PASSES = 4  # each linear; more only after a line that breaks tokenising
# Half of a UTF-16 surrogate pair: JSON's `\ud83d` escape gives one (a browser saves a broken
# emoji so), which no UTF-8 file, compiler or page can hold.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class SubmissionError(Exception):
    """The file cannot be graded as a submission; the message says why, for the student."""


@dataclass(frozen=True)
class SubmittedCell:
    """One cell or statement as the sandbox will run it."""

    source: str
    label: str
    first_line: int = 1
    exercise: str | None = None  # from the nbgrader grade_id of a notebook cell (`ex3_...`)
    locked: bool = False  # a read-only cell of the release (setup, self-checks, graded cells)
    index: int | None = None  # 0-based position in the notebook's cells (None for a .py file)
    # "demo" or "self-check": a lesson cell exactly as released, which grading may leave out
    # (`autograder.skipping`); None for every other cell, a student's edited copy included
    lesson_tag: str | None = None
    grade_id: str | None = None


def read_submission(path: Path | str) -> list[SubmittedCell]:
    """The cells of the submission at `path` (`.ipynb` or `.py`), in execution order."""
    path = Path(path)
    if path.is_dir():
        raise SubmissionError(f"{path} is a folder; give the notebook (.ipynb) or .py file")
    try:
        if path.stat().st_size > MAX_SUBMISSION_BYTES:
            raise SubmissionError(_too_large(path))
        data = path.read_bytes()
    except FileNotFoundError:
        raise SubmissionError(f"{path}: no such file") from None
    except OSError as err:
        raise SubmissionError(f"{path}: cannot read it ({err.strerror})") from None
    return read_content(data, name=str(path))


def read_content(content: bytes | str | dict, *, name: str = "submission") -> list[SubmittedCell]:
    """The cells of a submission given as its contents rather than a path.

    A dict is a notebook already decoded from JSON. For bytes or text, `name` decides the kind
    by its suffix (`.ipynb` or `.py`); without one, text that is a JSON object is a notebook.
    """
    if isinstance(content, dict):
        return notebook_cells(content, name=name)
    if len(content) > MAX_SUBMISSION_BYTES:
        raise SubmissionError(_too_large(name))
    text = _decode(content, name) if isinstance(content, bytes) else content
    if not text.strip():
        raise SubmissionError(f"{name} is empty: there is nothing to grade")
    suffix = Path(name).suffix.lower()
    if suffix == ".ipynb" or (suffix != ".py" and text.lstrip().startswith("{")):
        return notebook_cells(_parse_notebook_json(text, name), name=name)
    if suffix in (".py", ""):
        return python_cells(text)
    raise SubmissionError(
        f"{name}: a submission is a notebook (.ipynb) or a Python file (.py), not {suffix}"
    )


def _too_large(name) -> str:
    return (f"{name} is larger than {MAX_SUBMISSION_BYTES // 2**20} MB: clear the notebook's "
            "outputs (Edit > Clear Outputs of All Cells) and submit it again")


def _decode(content: bytes, name: str) -> str:
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise SubmissionError(
            f"{name} is not UTF-8 text (byte {err.start}): save it as a notebook or .py file"
        ) from None


def _parse_notebook_json(text: str, name: str) -> dict:
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as err:
        raise SubmissionError(
            f"{name} is not a valid notebook: its JSON is broken at line {err.lineno}, "
            f"column {err.colno} ({err.msg}). Reopen it in Jupyter or download it again."
        ) from None
    except RecursionError:  # json's parser stops at about a thousand levels
        raise SubmissionError(
            f"{name} is not a notebook Jupyter writes: its JSON is nested too deeply to read. "
            "Reopen it in Jupyter or download it again."
        ) from None
    except (ValueError, MemoryError) as err:  # a number of more than 4300 digits...
        reason = " ".join(str(err).split())[:200]
        raise SubmissionError(
            f"{name} is not a notebook Jupyter writes: its JSON cannot be read ({reason}). "
            "Reopen it in Jupyter or download it again."
        ) from None
    if not isinstance(notebook, dict):
        raise SubmissionError(f"{name} is not a notebook: it holds JSON but no notebook object")
    return notebook


def replace_lone_surrogates(document) -> int:
    """Every lone surrogate in the strings (keys too) of a parsed JSON `document` replaced by
    U+FFFD, in place; how many there were. One pass, without recursion."""
    replaced = 0

    def fixed(text: str) -> str:
        nonlocal replaced
        text, count = _LONE_SURROGATE.subn("\ufffd", text)
        replaced += count
        return text

    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in [key for key in node if isinstance(key, str)
                        and _LONE_SURROGATE.search(key)]:
                node[fixed(key)] = node.pop(key)
            items = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        for key, value in list(items):
            if isinstance(value, str):
                if _LONE_SURROGATE.search(value):
                    node[key] = fixed(value)
            elif isinstance(value, (dict, list)):
                stack.append(value)
    return replaced


def notebook_cells(notebook: dict, *, name: str = "notebook") -> list[SubmittedCell]:
    """All code cells of a notebook, in order, magics rewritten to plain Python."""
    cells = notebook.get("cells")
    if not isinstance(cells, list) or notebook.get("nbformat") != 4:
        raise SubmissionError(
            f"{name} is not a Jupyter notebook in format 4: it has no list of cells"
        )
    _check_assignment(cells, name)
    out = []
    budget = MAX_MAGIC_CHARS
    for index, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            try:
                source = "".join(source)
            except TypeError:  # a line that is no string (hostile JSON): as its text
                source = "".join(str(line) for line in source)
        if not isinstance(source, str):
            raise SubmissionError(f"{name}: cell {index} has no readable source")
        if not source.isascii():  # as `replace_lone_surrogates`
            source = _LONE_SURROGATE.sub("\ufffd", source)
        grade_id = _grade_id(cell)
        label = f"cell {index}" + (f" ({grade_id})" if grade_id else "")
        prefix = (grade_id or "").partition("_")[0]
        lesson_tag = tag_of(grade_id, source)  # the source as handed in, before any rewriting
        if len(source) <= budget and _may_hold_magic(source) and _MAGIC_LINE.search(source):
            budget -= len(source)
            source = transform_magics(source)
        out.append(
            SubmittedCell(
                source=source,
                label=label,
                exercise=prefix if prefix in EXERCISES else None,
                locked=_nbgrader(cell).get("locked") is True,
                index=index - 1,
                lesson_tag=lesson_tag,
                grade_id=grade_id,
            )
        )
    return out


def _may_hold_magic(source: str) -> bool:
    """Whether `_MAGIC_LINE` can match at all (each of its forms needs one of these
    characters): most cells are not searched line by line."""
    return "%" in source or "!" in source or "?" in source


def _nbgrader(cell: dict) -> dict:
    meta = cell.get("metadata")
    nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbgrader if isinstance(nbgrader, dict) else {}


def _grade_id(cell: dict) -> str | None:
    grade_id = _nbgrader(cell).get("grade_id")
    return grade_id if isinstance(grade_id, str) and grade_id else None


def _check_assignment(cells: list, name: str) -> None:
    """Refuse a notebook of another assignment: it must carry this assignment's grade_ids."""
    grade_ids = {gid for cell in cells if isinstance(cell, dict) and (gid := _grade_id(cell))}
    if not grade_ids:
        raise SubmissionError(
            f"{name} is not the notebook of this assignment: it has none of its nbgrader "
            f"cells ({', '.join(sorted(GRADED_CELL_IDS))}). Start from the released notebook."
        )
    if not grade_ids & set(GRADED_CELL_IDS):
        found = ", ".join(sorted(grade_ids)[:5])
        raise SubmissionError(
            f"{name} is the notebook of another assignment: its graded cells are {found}, "
            f"this one expects {', '.join(sorted(GRADED_CELL_IDS))}."
        )


def transform_magics(source: str) -> str:
    """IPython syntax (`%magic`, `!cmd`, `x?`) rewritten to plain Python calls.

    IPython's own transformers do the rewriting, but not its loop, which tokenises the whole
    cell again after each rewrite (quadratic, and it gives up after 500 rewrites): here each
    pass tokenises once and rewrites every logical line it found, each on its own. Source that
    IPython cannot rewrite is left as written, and the sandbox reports its syntax error.
    IPython's transformer is only imported for the few cells that need it.
    """
    if not _MAGIC_LINE.search(source):
        return source
    from IPython.core import inputtransformer2 as ipython  # deferred: rarely needed, slow

    manager = ipython.TransformerManager()
    try:
        lines = (source if source.endswith("\n") else source + "\n").splitlines(keepends=True)
        for transform in manager.cleanup_transforms + manager.line_transforms:
            lines = transform(lines)
        for _ in range(_TRANSFORM_PASSES):
            lines, changed = _rewrite_once(ipython, manager, lines)
            if not changed:
                break
        return "".join(lines)
    except Exception:  # noqa: BLE001 - IPython gave up on this text: the student's syntax
        return source


def _rewrite_once(ipython, manager, lines: list[str]) -> tuple[list[str], bool]:
    """One tokenising pass: every logical line with IPython syntax rewritten on its own, so
    that the work stays linear however many such lines there are."""
    out, done, changed = [], 0, False  # done: lines already copied to `out`
    for tokens in ipython.make_tokens_by_line(lines):
        candidates = [match for kind in manager.token_transformers
                      if (match := kind.find([tokens]))]
        if not candidates:
            continue
        first, last = candidates[0].start_line, tokens[-1].start[0] - 1  # 0-based rows
        if first < done or last < first:
            continue
        segment = lines[first:last + 1]  # the logical line, continuation lines included
        for match in sorted(candidates, key=ipython.TokenTransformBase.sortby):
            match.start_line -= first
            if hasattr(match, "q_line"):  # HelpEnd also remembers where its `?` is
                match.q_line -= first
            try:
                segment = match.transform(segment)
            except SyntaxError:
                continue
            out += lines[done:first] + segment
            done, changed = last + 1, True
            break
    return out + lines[done:], changed


def python_cells(text: str) -> list[SubmittedCell]:
    """The top-level statements of a `.py` file, each with the line it starts on.

    Decorators belong to their function; a file that does not parse is one cell, so that the
    sandbox reports the syntax error with its line.
    """
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # too deeply nested...
        return [SubmittedCell(source=text, label="the file", first_line=1)]
    lines = text.splitlines(keepends=True)
    spans: list[list[int]] = []  # [first line, last line] per cell
    for node in module.body:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = node.end_lineno or start
        if spans and start <= spans[-1][1]:  # `a = 1; b = 2` shares a line: one cell
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return [
        SubmittedCell(source="".join(lines[start - 1 : end]), label=f"line {start}",
                      first_line=start)
        for start, end in spans
    ]

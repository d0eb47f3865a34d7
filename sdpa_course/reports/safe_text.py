"""Student-controlled text made harmless where people read it: a terminal and a spreadsheet.

Anything a student controls (their id, which is a folder name; error messages quoting their
code; notes) may hold escape sequences that redraw a terminal, and may start with `=`, `+`,
`-`, `@`, a tab or a carriage return, which a spreadsheet opening the CSV runs as a formula.
Unicode's invisible characters are shown too: format characters (bidirectional overrides
and marks, zero-width joiners, the byte-order mark), which reorder or hide what is shown, and
the line and paragraph separators. Every function is one linear pass.
"""

from __future__ import annotations

import unicodedata

# Control (Cc), format (Cf), surrogate (Cs), line and paragraph separator (Zl, Zp) characters.
_UNSEEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def _shown(char: str) -> str:
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def for_terminal(text) -> str:
    """`text` with every control or invisible character shown as an escape (`\\x1b`, `\\n`,
    `\\u202e`), never sent."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    return "".join(_shown(char) if unicodedata.category(char) in _UNSEEN_CATEGORIES else char
                   for char in text)


def id_for_terminal(student) -> str:
    """A student id as `for_terminal` shows it, in quotes when blanks begin or end it (so that
    `jdoe ` and `jdoe` are told apart in a table)."""
    text = for_terminal(student)
    return f'"{text}"' if not text or text != text.strip() else text


def for_spreadsheet(text) -> str:
    """A CSV cell that a spreadsheet shows as text, and a terminal too (`cat scores.csv`):
    control and invisible characters escaped as `for_terminal` does, then a leading `'` before
    a formula's start, also one behind blanks (` =1+1`)."""
    text = "" if text is None else for_terminal(text)
    return "'" + text if text.lstrip().startswith(FORMULA_STARTS) else text

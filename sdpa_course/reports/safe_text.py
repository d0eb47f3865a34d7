"""Student-controlled text made harmless where people read it: a terminal and a spreadsheet.

Anything a student controls (their id, which is a folder name; error messages quoting their
code; notes) may hold escape sequences that redraw a terminal, and may start with `=`, `+`,
`-`, `@`, a tab or a carriage return, which a spreadsheet opening the CSV runs as a formula.
Both functions are one linear pass.
"""

from __future__ import annotations

# Unicode's bidirectional overrides and isolates reorder what a terminal shows.
_BIDI = {0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def for_terminal(text) -> str:
    """`text` with every control character shown as an escape (`\\x1b`, `\\n`), never sent."""
    out = []
    for char in str(text):
        code = ord(char)
        if code < 0x20 or 0x7F <= code < 0xA0 or code in _BIDI:
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, f"\\x{code:02x}"
                                                                   if code < 0x100
                                                                   else f"\\u{code:04x}"))
        else:
            out.append(char)
    return "".join(out)


def for_spreadsheet(text) -> str:
    """A CSV cell that a spreadsheet shows as text, and a terminal too (`cat scores.csv`):
    control characters escaped as `for_terminal` does, then a leading `'` before a formula's
    start."""
    text = "" if text is None else for_terminal(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text

"""Student-controlled text as a terminal shows it: on one line, nothing it would act on.

The report (`autograder.report`) and `check`'s error messages print what a notebook holds
(file names, grade ids, messages quoting student code); each goes through `one_line` first.
"""

from __future__ import annotations

import re
import unicodedata

# Characters a terminal acts on rather than shows: C0 and C1 controls (ESC starts cursor
# moves, colours, title changes...), DEL, line and paragraph separators, format characters
# (bidirectional overrides reorder what is shown) and lone surrogates (which cannot even be
# printed). Each is shown as its escape, \x1b or \u202e, on one line.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text) -> str:
    """`text` on one line with every character a terminal would act on escaped."""
    text = str(text).replace("\t", "    ")
    if text.isascii():
        return _UNSAFE.sub(lambda m: _escape(m.group()), text)
    return "".join(_escape(c) if unicodedata.category(c) in _UNSAFE_CATEGORIES else c
                   for c in text)

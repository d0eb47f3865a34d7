"""A submission that tries to run script in every page that shows it: the answer key with
XSS payloads in the written answer, a markdown cell of its own, printed output, an exception,
cell tags, an attachment and a raw cell. Each payload calls `alert(N)` with its own N, so a
page that runs one says which.
"""

from __future__ import annotations

import copy

from nbformat.v4 import new_code_cell, new_markdown_cell, new_raw_cell

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "[click me](javascript:alert(3))",
    "<svg onload=alert(4)><circle r=1></circle></svg>",
    '<iframe srcdoc="<script>alert(5)</script>"></iframe>',
    "$\\text{<img src=x onerror=alert(6)>}$",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(7)></style></mglyph>"
    "</table></mtext></math>",
    '<a href="data:text/html,<script>alert(8)</script>">data link</a>',
    '<details open ontoggle=alert(9)><summary>x</summary></details>',
    '<form action="javascript:alert(10)"><button>go</button></form>',
    "<style>body{background:url(javascript:alert(11))}</style>",
    '<object data="javascript:alert(12)"></object><embed src="javascript:alert(13)">',
]
MARKDOWN = "\n\n".join(["Scaling keeps the softmax soft: $\\sqrt{d_k}$.", *PAYLOADS])
PRINTED = "<script>alert(20)</script><img src=x onerror=alert(21)>\x1b[31mred\x1b[0m"


def hostile(answer_key):
    nb = copy.deepcopy(answer_key)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "ex2_explain":
            cell.source = MARKDOWN
    printing = new_code_cell(f"print({PRINTED!r})\nraise ValueError({PAYLOADS[1]!r})")
    printing.metadata["tags"] = ['x" onmouseover="alert(30)', "<script>alert(31)</script>"]
    note = new_markdown_cell(MARKDOWN + "\n\n![att](attachment:evil.html)")
    note.attachments = {"evil.html": {"text/html": "<script>alert(32)</script>"}}
    raw = new_raw_cell("<script>alert(33)</script><img src=x onerror=alert(34)>")
    raw.metadata["raw_mimetype"] = "text/html"
    nb.cells += [printing, note, raw]
    return nb

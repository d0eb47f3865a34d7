"""Start-up time spent on imports: what the kit never uses is deferred, the rest made quicker.

jsonschema (imported by nbformat, so by nbgrader and every command that reads notebooks) looks
for `rfc3987_syntax` when it is installed (jupyter-events asks for it) to check the "iri"
formats, and that module builds a Lark grammar as it is imported: about a second of CPU, and
half a second more to tear down at exit, in every `sdpa-course grade`. No notebook schema
uses those formats. `defer_iri_grammar`, called before nbformat is imported, puts a stand-in
in its place whose `is_valid_syntax` imports the real module at its first call: jsonschema
registers the same format checkers, which give the same answers, and nobody who does not
check an IRI pays for the grammar.

`collector_paused` imports with Python's cyclic garbage collector off: importing nbgrader,
nbconvert and SQLAlchemy creates objects that live as long as the process, and a tenth of the
import time went to collections that freed none of them.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import sys
import types
from contextlib import contextmanager

IRI_MODULE = "rfc3987_syntax"


def _real_is_valid_syntax(term: str, value: str) -> bool:
    if getattr(sys.modules.get(IRI_MODULE), "_sdpa_stand_in", False):
        sys.modules.pop(IRI_MODULE, None)  # the stand-in leaves: import the module itself
    return importlib.import_module(IRI_MODULE).is_valid_syntax(term, value)


def defer_iri_grammar() -> None:
    """Stand in for `rfc3987_syntax` until its `is_valid_syntax` is called (see above).

    Does nothing where it is not installed (jsonschema then skips those checkers, as it
    would) or already imported, or once jsonschema's format checkers are set up.
    """
    if IRI_MODULE in sys.modules or "jsonschema._format" in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(IRI_MODULE)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return
    stand_in = types.ModuleType(IRI_MODULE, "Imported at the first is_valid_syntax call.")
    stand_in._sdpa_stand_in = True
    stand_in.is_valid_syntax = _real_is_valid_syntax
    sys.modules[IRI_MODULE] = stand_in


@contextmanager
def collector_paused():
    """The cyclic garbage collector off for the block (imports), then as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

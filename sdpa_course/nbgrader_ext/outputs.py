"""`new_output`: nbformat's `nbformat.v4.new_output` without its schema check.

The kit builds every output it puts in a graded notebook or a page itself, of four known
kinds, from strings it made or coerced (`autograde`, `safe_notebook`); nbformat's check of
each one against the notebook schema cost about 45 a submission, a tenth of a millisecond
each. The notebook is still checked whole where nbformat checks it (nbconvert's exporter,
after its steps); tests/test_notebook_outputs.py holds these outputs to the schema.
"""

from __future__ import annotations

from nbformat import NotebookNode

# nbformat's defaults for each kind of output, as `nbformat.v4.new_output` fills them in
_DEFAULTS = {
    "stream": lambda: {"name": "stdout", "text": ""},
    "display_data": lambda: {"metadata": NotebookNode(), "data": NotebookNode()},
    "execute_result": lambda: {"metadata": NotebookNode(), "data": NotebookNode(),
                               "execution_count": None},
    "error": lambda: {"ename": "NotImplementedError", "evalue": "", "traceback": []},
}


def new_output(output_type: str, data=None, **kwargs) -> NotebookNode:
    """The output `nbformat.v4.new_output` makes from the same arguments, unchecked."""
    output = NotebookNode(output_type=output_type)
    output.update(_DEFAULTS[output_type]())
    output.update(kwargs)
    if data is not None:
        output.data = data
    return output

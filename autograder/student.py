"""`student`: what a hidden test sees of a submission, a thin proxy over its Sandbox.

Every value comes back as plain data (numbers, numeric arrays, tuples, lists), copied out of
the sandboxed process; nothing the student defined ever runs in the trusted process.
"""

from __future__ import annotations


class Student:
    def __init__(self, sandbox):
        self._sandbox = sandbox

    def has(self, name: str) -> bool:
        return self._sandbox.has(name)

    def value(self, name: str):
        """A variable the submission defines (`ex1_scores`), as plain data."""
        return _annotated(lambda: self._sandbox.get(name), f"reading {name}")

    def call(self, name: str, *args, readonly: bool = False, **kwargs):
        """`name(*args, **kwargs)` run in the sandbox; `readonly` makes array inputs read-only."""
        return _annotated(
            lambda: self._sandbox.call(name, *args, readonly=readonly, **kwargs),
            f"calling {name}",
        )

    def call_with_inputs(self, name: str, *args, readonly: bool = False, **kwargs):
        """Like `call`, also returning the arguments as the function left them."""
        return _annotated(
            lambda: self._sandbox.call_with_inputs(name, *args, readonly=readonly, **kwargs),
            f"calling {name}",
        )


def _annotated(action, during: str):
    from autograder.sandbox import StudentError

    try:
        return action()
    except StudentError as err:
        if not getattr(err, "during", None):
            err.during = during
        raise

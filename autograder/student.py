"""`student`: what a hidden test sees of a submission, a thin proxy over its Sandbox.

Every value comes back as plain data (numbers, numeric arrays, tuples, lists), copied out of
the sandboxed process; nothing the student defined ever runs in the trusted process. Every
failure comes back in the kit's words only (`autograder.withheld`): the suites and the
diagnoses call the submission on hidden inputs, and what it writes then is never shown.
"""

from __future__ import annotations

from autograder.sandbox import StudentDied, StudentError, StudentMemoryLimit, StudentTimeout
from autograder.variants import DEFAULT, Variant
from autograder.withheld import Located, withhold

# Once a function has hung, blown its memory or killed its process, calling it again would
# only cost the limit (or one of the sandbox's few restarts) again: later calls fail at once
# with the same error, unless their inputs are no larger than inputs it already answered in
# time (a slow loop that answers the value tests but not the memory test's size is still
# probed at the sizes it answers, so that its mistakes are diagnosed: issue 27).


def _size(args, kwargs) -> int:
    """How large a call's inputs are: the elements of its arrays, 1 for anything else."""
    return sum(int(getattr(value, "size", 1)) for value in (*args, *kwargs.values()))


class Student:
    """The submission's names, called in its sandbox; `variant` is whose exercises they are
    (`autograder.variants`): the numbers and hidden inputs the tests grade against."""

    def __init__(self, sandbox, variant: Variant = DEFAULT):
        self._sandbox = sandbox
        self.variant = variant
        self._exhausted: dict[str, Exception] = {}
        self._located = Located()  # the one place its exceptions are named at
        self._answered: dict[str, int] = {}  # name -> the largest inputs it answered in time

    def has(self, name: str) -> bool:
        """Whether the submission defines `name`; False too if its process cannot answer."""
        try:
            return self._sandbox.has(name)
        except StudentError:
            return False

    def value(self, name: str):
        """A variable the submission defines (`ex1_scores`), as plain data."""
        return self._annotated(lambda: self._sandbox.get(name), name, f"reading {name}", 0)

    def call(self, name: str, *args, readonly: bool = False, **kwargs):
        """`name(*args, **kwargs)` run in the sandbox; `readonly` makes array inputs read-only."""
        return self._annotated(
            lambda: self._sandbox.call(name, *args, readonly=readonly, **kwargs),
            name,
            f"calling {name}",
            _size(args, kwargs),
        )

    def call_measuring_memory(self, name: str, *args, **kwargs):
        """Like `call`, as `(result, MemoryUse)`: the peak memory the call allocated beyond
        its inputs as tracemalloc saw it in the sandbox (None if the call stopped it), and how
        far it raised its process's memory high-water mark, read from outside the process."""
        return self._annotated(
            lambda: self._sandbox.call_measuring_memory(name, *args, **kwargs),
            name,
            f"calling {name}",
            _size(args, kwargs),
        )

    def call_with_inputs(self, name: str, *args, readonly: bool = False, **kwargs):
        """Like `call`, also returning the arguments as the function left them."""
        return self._annotated(
            lambda: self._sandbox.call_with_inputs(name, *args, readonly=readonly, **kwargs),
            name,
            f"calling {name}",
            _size(args, kwargs),
        )

    def _annotated(self, action, name: str, during: str, size: int):
        """Run `action` on inputs of `size`; a StudentError leaves in the kit's words
        (`withheld`), knowing which name it came from and when."""
        if name in self._exhausted and size > self._answered.get(name, -1):
            raise self._exhausted[name]
        try:
            result = action()
        except StudentError as raised:
            err = withhold(raised, name, during, self._located)
            if not getattr(err, "during", None):
                err.during, err.target = during, name
            if isinstance(err, (StudentTimeout, StudentMemoryLimit, StudentDied)):
                self._exhausted[name] = err
            raise err from None
        self._answered[name] = max(self._answered.get(name, -1), size)
        return result

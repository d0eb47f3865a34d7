"""Reports graded once each, ahead of the tests that read them, on the machine's second core.

`GradedAhead(grade, keys)` starts grading every key in `keys` (in that order) on two threads as
soon as it is made; `graded[key]` waits for that key's report, or grades a key it was not
given on the spot. Each key is graded exactly once, by the same `grade` function a test would
call itself: the tests read the very report they would have made, only sooner. Sandboxes may
share the default pool from threads (autograder.sandbox.pool), and the sandbox charges a cell
or a call only the time its process ran, not the time it waited for the other thread's, so
grading two at once changes no report.

`keys_of(request, names)`: the parameter values (a tuple of `names`) of the tests of the
requesting module that the session will run, in their order: so a run of a few selected
tests grades only what they read.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

THREADS = 2  # the machine the suite is sized for has two cores


class GradedAhead:
    def __init__(self, grade: Callable[[Hashable], dict], keys: Iterable[Hashable]):
        self._grade = grade
        self._executor = ThreadPoolExecutor(THREADS, thread_name_prefix="graded-ahead")
        self._futures: dict[Hashable, Future] = {}
        for key in keys:
            if key not in self._futures:
                self._futures[key] = self._executor.submit(grade, key)

    def __getitem__(self, key: Hashable) -> dict:
        if key not in self._futures:  # a key no selected test's parameters named
            future: Future = Future()
            try:
                future.set_result(self._grade(key))
            except BaseException as err:  # kept, and raised to every reader alike
                future.set_exception(err)
            self._futures[key] = future
        return self._futures[key].result()

    def close(self) -> None:
        """Stop grading what no test read (a run stopped early), wait for what is running."""
        self._executor.shutdown(wait=True, cancel_futures=True)


def keys_of(request, names: tuple[str, ...]) -> list[tuple]:
    """`names`' values in the callspecs of the session's tests of `request`'s module, in order."""
    keys = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if item.module is not request.module or callspec is None:
            continue
        if all(name in callspec.params for name in names):
            keys.append(tuple(callspec.params[name] for name in names))
    return keys

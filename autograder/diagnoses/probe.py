"""Calling the student's code for a diagnosis, where failing is an answer, not an error."""

from __future__ import annotations

from dataclasses import dataclass

from autograder.sandbox import StudentError


@dataclass
class Answer:
    value: object = None
    error: str = ""  # the diagnosis code of the failure ("crashed", "timeout"...), or ""

    @property
    def ok(self) -> bool:
        return not self.error


class Prober:
    """Calls into the sandbox, turning a StudentError into a failed `Answer`.

    A function that already hung, blew its memory or killed its process is not called again
    (the `Student` proxy remembers), so probing it costs nothing.
    """

    def __init__(self, student):
        self.student = student

    def value(self, name: str) -> Answer:
        return self._ask(lambda: self.student.value(name))

    def call(self, name: str, *args, **kwargs) -> Answer:
        return self._ask(lambda: self.student.call(name, *args, **kwargs))

    def call_measuring_memory(self, name: str, *args, **kwargs) -> Answer:
        """`(result, MemoryUse)` of the call, as `Student.call_measuring_memory` gives it."""
        return self._ask(lambda: self.student.call_measuring_memory(name, *args, **kwargs))

    def call_with_inputs(self, name: str, *args, **kwargs) -> Answer:
        return self._ask(lambda: self.student.call_with_inputs(name, *args, **kwargs))

    def _ask(self, action) -> Answer:
        try:
            return Answer(value=action())
        except StudentError as err:
            return Answer(error=err.diagnosis)

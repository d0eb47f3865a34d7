"""Calling the student's code for a diagnosis, where failing is an answer, not an error."""

from __future__ import annotations

from dataclasses import dataclass

# After one of these, calling the same function again would only cost the time limit again.
_FATAL = ("timeout", "memory-limit")


@dataclass
class Answer:
    value: object = None
    error: str = ""  # the diagnosis code of the failure ("crashed", "timeout"...), or ""

    @property
    def ok(self) -> bool:
        return not self.error


class Prober:
    """Calls into the sandbox, turning a StudentError into a failed `Answer`."""

    def __init__(self, student, given_up: set[str] = frozenset()):
        self.student = student
        self.given_up = set(given_up)  # functions already known to hang or blow up

    def value(self, name: str) -> Answer:
        return self._ask(name, lambda: self.student.value(name))

    def call(self, name: str, *args, **kwargs) -> Answer:
        return self._ask(name, lambda: self.student.call(name, *args, **kwargs))

    def call_with_inputs(self, name: str, *args, **kwargs) -> Answer:
        return self._ask(name, lambda: self.student.call_with_inputs(name, *args, **kwargs))

    def _ask(self, name, action) -> Answer:
        from autograder.sandbox import StudentError

        if name in self.given_up:
            return Answer(error="skipped")
        try:
            return Answer(value=action())
        except StudentError as err:
            if err.diagnosis in _FATAL:
                self.given_up.add(name)
            return Answer(error=err.diagnosis)

"""`Variant`: one student's exercises, the numbers they see and the hidden inputs they get.

Plain, hashable and picklable, so that it travels to worker processes and Dask workers as it
is (or as `to_dict()`). The answers it expects come from `sdpa_ref`, like every grade.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import asdict, dataclass, replace

import numpy as np

import sdpa_ref
from autograder.variants import keys
from autograder.variants.numbers import DEFAULT_LABEL, LESSON_EX1, LESSON_EX2, student_numbers


def root_text(d_k: int) -> str:
    """sqrt(d_k) as a student writes it: `8` for 64, `sqrt(2)` for 2."""
    root = math.isqrt(d_k)
    return str(root) if root * root == d_k else f"sqrt({d_k})"


def _vector(numbers) -> str:
    return "(" + ", ".join(str(x) for x in numbers) + ")"


@dataclass(frozen=True)
class Ex1Numbers:
    """One query attends to two keys: small integers, d_k = len(q)."""

    q: tuple[int, ...]
    k1: tuple[int, ...]
    k2: tuple[int, ...]
    v1: tuple[int, ...]
    v2: tuple[int, ...]
    d_k: int

    @property
    def keys(self) -> np.ndarray:
        return np.array([self.k1, self.k2], dtype=float)  # (2, d_k)

    @property
    def values(self) -> np.ndarray:
        return np.array([self.v1, self.v2], dtype=float)  # (2, d_v)

    @property
    def raw(self) -> np.ndarray:
        """The raw dot products q·k1, q·k2."""
        return self.keys @ np.array(self.q, dtype=float)  # (2, d_k) @ (d_k,) -> (2,)

    @property
    def scale(self) -> float:
        return 1 / math.sqrt(self.d_k)

    def expected(self) -> dict[str, np.ndarray]:
        """The answers: scores, weights and output, each of shape (2,)."""
        scores = self.raw * self.scale  # (2,)
        weights = sdpa_ref.softmax(scores)  # (2,)
        return {"ex1_scores": scores, "ex1_weights": weights,
                "ex1_output": weights @ self.values}  # (2,) @ (2, d_v) -> (d_v,)

    def text(self) -> str:
        return (f"q = {_vector(self.q)}, k1 = {_vector(self.k1)}, k2 = {_vector(self.k2)}, "
                f"v1 = {_vector(self.v1)}, v2 = {_vector(self.v2)}, d_k = {self.d_k}")


@dataclass(frozen=True)
class Ex2Numbers:
    """Two keys whose raw scores differ by `gap`, the larger first; head dimension d_k."""

    gap: int
    d_k: int

    @property
    def raw(self) -> np.ndarray:
        return np.array([float(self.gap), 0.0])  # (2,) the larger key first

    @property
    def scaled(self) -> np.ndarray:
        return self.raw / math.sqrt(self.d_k)  # (2,)

    def expected(self) -> dict[str, float]:
        """The four numbers of exercise 2(b)."""
        return {
            "p_unscaled": float(sdpa_ref.softmax(self.raw)[0]),
            "p_scaled": float(sdpa_ref.softmax(self.scaled)[0]),
            "grad_unscaled": float(sdpa_ref.softmax_jacobian(self.raw)[1, 1]),
            "grad_scaled": float(sdpa_ref.softmax_jacobian(self.scaled)[1, 1]),
        }

    def text(self) -> str:
        return f"raw scores ({self.gap}, 0), d_k = {self.d_k}"


@dataclass(frozen=True)
class Variant:
    """A student's exercises: `label` names them ("default" for the lesson's own)."""

    label: str
    student: str | None
    ex1: Ex1Numbers
    ex2: Ex2Numbers
    inputs_seed: int | None = None  # None: the lesson's own fixed hidden inputs

    @property
    def is_default(self) -> bool:
        return self.label == DEFAULT_LABEL

    def rng(self, purpose: str) -> np.random.Generator:
        """The random numbers of one kind of hidden input (`ex3`, `ex2`...) for this student."""
        if self.inputs_seed is None:
            raise ValueError("the default variant's hidden inputs are fixed, not drawn")
        sequence = np.random.SeedSequence(self.inputs_seed,
                                          spawn_key=(zlib.crc32(purpose.encode()),))
        return np.random.default_rng(sequence)

    def public(self) -> dict:
        """What a report may show: the label, whose it is, the numbers, and whether the hidden
        inputs were the student's own (never the inputs themselves)."""
        return {"label": self.label, "student": self.student,
                "ex1": {k: list(v) if isinstance(v, tuple) else v
                        for k, v in asdict(self.ex1).items()},
                "ex2": asdict(self.ex2), "own_inputs": self.inputs_seed is not None}

    def to_dict(self) -> dict:
        """Plain data for a pipe or a Dask task; `from_dict` reads it back."""
        seed = None if self.inputs_seed is None else str(self.inputs_seed)
        return {**self.public(), "inputs_seed": seed}

    @classmethod
    def from_dict(cls, data: dict) -> Variant:
        ex1 = {k: tuple(v) if isinstance(v, list) else v for k, v in data["ex1"].items()}
        seed = data.get("inputs_seed")
        return cls(str(data["label"]), data.get("student"), Ex1Numbers(**ex1),
                   Ex2Numbers(**data["ex2"]), None if seed is None else int(seed))

    def text(self) -> str:
        """`variant 3f9a2c (student alice)`, or `the default variant (the lesson's numbers)`."""
        if self.is_default:
            return "the default variant (the lesson's numbers)"
        return f"variant {self.label}" + (f" (student {self.student})" if self.student else "")


DEFAULT = Variant(DEFAULT_LABEL, None, Ex1Numbers(**LESSON_EX1), Ex2Numbers(**LESSON_EX2))


def public_variant(numbers_key: str, assignment: str, student: str) -> Variant:
    """A student's numbers from a course's public numbers key (as a released notebook works
    them out), with the lesson's own hidden inputs: the secret ones need the seed."""
    numbers = student_numbers(numbers_key, assignment, student)
    return Variant(numbers["label"], student, Ex1Numbers(**numbers["ex1"]),
                   Ex2Numbers(**numbers["ex2"]))


def variant_for(seed: str | None, assignment: str, student: str) -> Variant:
    """The variant of `student` in a course with this seed; the default without a seed."""
    if not seed:
        return replace(DEFAULT, student=student)
    numbers = student_numbers(keys.numbers_key(seed), assignment, student)
    return Variant(numbers["label"], student, Ex1Numbers(**numbers["ex1"]),
                   Ex2Numbers(**numbers["ex2"]), keys.inputs_seed(seed, assignment, student))

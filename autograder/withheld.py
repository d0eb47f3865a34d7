"""What a student may learn of their code's run on the hidden inputs: the kit's words only.

Everything a submission writes while a hidden test or a diagnosis calls it (an exception's
message, its class's name, the line it came from, an exit code, a forged reply, an object's
class name) is the student's text, chosen while holding the hidden inputs: shown as it is,
one graded submission would hand the student their own hidden inputs. `Student` (the proxy
every suite and diagnosis calls through) passes each `StudentError` through `withhold`
before anything reads it, which keeps the kit's own words and a small, fixed vocabulary:

- an exception's type when it is one of Python's own (`BUILTIN_EXCEPTIONS`, about 70, and
  numpy's two), else "an exception of a class the submission defines";
- the cell and line of the first exception a hidden call of each function raised in this
  submission; any later one of that function's from another place is "another line of your
  code" (`Located`): a function that raises from a line chosen per input tells nothing;
- a missing module only when it is one of the libraries students reach for
  (`KNOWN_MODULES`);
- a value that cannot cross back as one of Python's or numpy's type names, else "an object
  of a class the submission defines", with one of the codec's fixed hints;
- a dead process as one sentence, never its exit code, signal or reply.

The message itself is dropped, with a sentence saying why and that the exercise's
self-check, run on the lesson's example, shows it. What the submission prints or warns
during these calls never joins the report (`Sandbox.output` holds its cells' output only).
"""

from __future__ import annotations

import builtins
import keyword
import re

from autograder.sandbox import (
    ForbiddenImport,
    MissingName,
    StudentDied,
    StudentError,
    StudentMemoryLimit,
    StudentRaised,
    StudentTimeout,
    Unserializable,
)

WITHHELD = ("its message is withheld, as it was written while your code ran on hidden "
            "inputs: the exercise's self-check shows it on the lesson's example")
OWN_CLASS = "an exception of a class the submission defines"
OWN_OBJECT = "an object of a class the submission defines"
ELSEWHERE = "another line of your code"

BUILTIN_EXCEPTIONS = frozenset(
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
) | {"numpy.exceptions.AxisError", "numpy.linalg.LinAlgError"}
# Type names a value that cannot cross back may be named by (codec.type_name's spelling).
PLAIN_TYPES = frozenset(
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and not issubclass(value, BaseException)
) | {"ellipsis", "function", "builtin_function_or_method", "method", "generator",
     "NoneType", "module", "numpy.ma.MaskedArray", "numpy.matrix", "numpy.ndarray"}
# Libraries a submission may import where the grader has only numpy and matplotlib.
KNOWN_MODULES = frozenset({
    "scipy", "torch", "jax", "jaxlib", "tensorflow", "keras", "pandas", "sklearn", "numba",
    "cupy", "einops", "sympy", "seaborn", "IPython", "tqdm", "PIL", "cv2", "mlx", "polars",
})
_HINTS = (
    "return a plain numpy array (np.asarray(...))",
    "return plain numbers, lists, tuples or numpy arrays",
    "the value is nested too deeply or is too large",
    "integers are limited to about 3000 digits",
    "dict keys must be plain strings",
    "only numeric and bool arrays can be returned",
)
_STRINGS_HINT = re.compile(r"strings are limited to [0-9]{1,12} characters")
_NO_MODULE = re.compile(r"No module named '([A-Za-z_][A-Za-z0-9_]{0,99})[A-Za-z0-9_.]{0,200}'")
_NOT_DEFINED = re.compile(r"name '([A-Za-z_][A-Za-z0-9_]{0,99})' is not defined")
_KIND = re.compile(r" an? (.{1,200}?)(?: \(item .*\))?; ")
_RESTARTED = re.compile(r"the submission's process was restarted [0-9]{1,4} times; nothing "
                        r"more is run")


class WithheldRaised(StudentRaised):
    """An exception a call on hidden inputs raised, in the kit's words: its type (bounded)
    and where (the first place only), its message withheld. `message` keeps, for the kit's
    own use, only a missing module's or an undefined name's name in Python's wording."""

    def __init__(self, type_name: str, message: str, where: str):
        super().__init__(type_name, message, where)
        kind = type_name if type_name in BUILTIN_EXCEPTIONS else OWN_CLASS
        self.args = (f"{kind} ({where}); {WITHHELD}" if where else f"{kind}; {WITHHELD}",)


class Located:
    """The one place in a submission's code each function's hidden calls' exceptions are
    named at: the first one's."""

    def __init__(self):
        self.first: dict[str, str] = {}

    def where(self, name: str, where: str) -> str:
        if not where:
            return ""
        first = self.first.setdefault(name, where)
        return where if where == first else ELSEWHERE


def exception_type(type_name: str) -> str:
    """`type_name` if Python or numpy defines it, else the class's name stays unsaid."""
    return type_name if type_name in BUILTIN_EXCEPTIONS else OWN_CLASS


def _message(type_name: str, message: str) -> str:
    """The only part of a message the kit reads: a missing module it knows, or the name a
    NameError names (matched against the submission's own cells, never shown)."""
    if type_name in ("ModuleNotFoundError", "ImportError"):
        found = _NO_MODULE.search(message[:2000])
        if found and found.group(1) in KNOWN_MODULES:
            return f"No module named '{found.group(1)}'"
    elif type_name == "NameError":
        found = _NOT_DEFINED.search(message[:2000])
        if found and not keyword.iskeyword(found.group(1)):
            return f"name '{found.group(1)}' is not defined"
    return ""


def _unsupported(name: str, message: str, verb: str) -> str:
    if "too large to send back" in message or "cannot be sent back" in message:
        return f"{name} {verb} a value that cannot be sent back"
    found = _KIND.search(message[:1000])
    kind = found.group(1) if found else ""
    if kind.startswith("numpy array of dtype"):
        phrase = "a numpy array whose dtype is not numbers"
    elif kind.startswith("dict key"):
        phrase = "a dict whose keys are not all text"
    elif kind in PLAIN_TYPES:
        phrase = f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"
    else:
        phrase = OWN_OBJECT
    hint = next((h for h in _HINTS if message.endswith(h)), "")
    strings = _STRINGS_HINT.search(message[-80:])
    hint = hint or (strings.group(0) if strings else _HINTS[1])
    return f"{name} {verb} {phrase}; {hint}"


def withhold(err: StudentError, name: str, what: str, located: Located) -> StudentError:
    """`err`, raised while `what` (`calling attention`) ran the submission's `name` on
    hidden inputs, as the kit's words alone (see the module's docstring)."""
    if isinstance(err, (WithheldRaised, ForbiddenImport)):
        return err  # already withheld; a forbidden import names one of the kit's packages
    if isinstance(err, MissingName):
        return MissingName(name)  # the name asked for, not the one a forged reply gave
    if isinstance(err, StudentRaised):
        return WithheldRaised(exception_type(err.type_name),
                              _message(err.type_name, err.message),
                              located.where(name, err.where))
    if isinstance(err, Unserializable):
        verb = "is" if what.startswith("reading") else "returned"
        return Unserializable(_unsupported(f"`{name}`" if verb == "is" else name, str(err),
                                           verb))
    if isinstance(err, StudentMemoryLimit):
        return StudentMemoryLimit(f"`{name}(...)` ran past the submission's memory limit")
    if isinstance(err, StudentTimeout):
        return err  # the kit's sentence: a limit and the seconds it allows
    if isinstance(err, StudentDied) and _RESTARTED.search(str(err)):
        return err
    if isinstance(err, StudentDied):
        return StudentDied(f"`{name}(...)` stopped: the submission's process ended or sent a "
                           f"reply that makes no sense (how is withheld: it happened while "
                           f"{what} on hidden inputs)")
    return StudentDied(f"`{name}(...)` stopped: the submission's process failed")

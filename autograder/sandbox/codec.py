"""Wire format between the trusted process and the sandbox worker: plain data, never pickle.

A message is a fixed header (magic, JSON length, blob length), a JSON document and one binary
blob holding the raw bytes of every array. Values are JSON scalars (None, bool, int, float, str),
JSON arrays (lists) and one-key objects tagging everything else:

    {"t": [...]}                      tuple
    {"d": [[key, value], ...]}        dict with str keys
    {"c": [real, imag]}               complex
    {"a": [dtype, shape, offset, n]}  numpy array of a numeric or bool dtype, bytes in the blob
    {"g": [dtype, offset, n]}         numpy scalar of such a dtype

Encoding checks exact types, so subclasses (ndarray subclasses, masked arrays, a float with a
custom __eq__) are refused with `UnsupportedValue`. Decoding trusts nothing: every field is
validated and the result is built only from JSON and bytes. This module is shipped into the
sandbox as source, so it imports only the standard library and numpy.
"""

from __future__ import annotations

import json
import os
import re
import struct

import numpy as np

MAGIC = b"SDPA"
HEADER = struct.Struct("!4sQQ")
MAX_JSON_BYTES = 16 * 2**20
MAX_DEPTH = 32
MAX_ITEMS = 1_000_000
MAX_INT_BITS = 10_000  # about 3000 digits, below Python's int-to-text limit
MAX_ARRAY_BYTES = 2**62  # what numpy can describe at all, counting a zero dimension as 1
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # may be half of a pair
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_DTYPE_RE = re.compile(r"[<>|=][biufc][0-9]{1,2}")  # fullmatch: no trailing newline
_NUMPY_SCALAR_TYPES = frozenset(
    t for t in set(np.sctypeDict.values()) if np.dtype(t).kind in "biufc"
)


class UnsupportedValue(Exception):
    """A value that cannot cross as plain data; `type_name` and `path` say which."""

    def __init__(self, type_name: str, path: str, hint: str):
        self.type_name = type_name
        self.path = path
        self.hint = hint
        super().__init__(f"{type_name} at {path or 'top level'}: {hint}")


class MalformedMessage(Exception):
    """Bytes from the other side that do not follow this format: the only exception
    `decode`, `parse_header` and `parse_json` raise, whatever the bytes."""


def type_name(value) -> str:
    """A readable name for the type of `value` (numpy.ma.MaskedArray, Foo, ...)."""
    kind = type(value)
    module = getattr(kind, "__module__", "") or ""
    qualname = getattr(kind, "__qualname__", kind.__name__)
    if module == "numpy.ma.core":
        module = "numpy.ma"
    if module in ("builtins", "__main__", ""):
        return qualname
    return f"{module}.{qualname}"


def _hint(value) -> str:
    if isinstance(value, np.ndarray) or type(value).__name__ == "MaskedArray":
        return "return a plain numpy array (np.asarray(...))"
    return "return plain numbers, lists, tuples or numpy arrays"


class _Encoder:
    def __init__(self, max_str_chars: int):
        self.blob = bytearray()
        self.items = 0
        self.max_str_chars = max_str_chars

    def encode(self, value, path: str = "", depth: int = 0):
        self.items += 1
        if depth > MAX_DEPTH or self.items > MAX_ITEMS:
            raise UnsupportedValue(type_name(value), path, "the value is nested too deeply or "
                                   "is too large")
        kind = type(value)
        if kind is int and value.bit_length() > MAX_INT_BITS:
            raise UnsupportedValue("int", path, "integers are limited to about 3000 digits")
        if value is None or kind is bool or kind is int or kind is float:
            return value
        if kind is str:
            if len(value) > self.max_str_chars:
                raise UnsupportedValue("str", path, f"strings are limited to "
                                       f"{self.max_str_chars} characters")
            return value
        if kind is complex:
            return {"c": [value.real, value.imag]}
        if kind is list:
            return [self.encode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
        if kind is tuple:
            return {"t": [self.encode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]}
        if kind is dict:
            pairs = []
            for key, item in value.items():
                if type(key) is not str:
                    raise UnsupportedValue(f"dict key {type_name(key)}", path,
                                           "dict keys must be plain strings")
                pairs.append([key, self.encode(item, f"{path}[{key!r}]", depth + 1)])
            return {"d": pairs}
        if kind is np.ndarray:
            return {"a": self._array(value, path)}
        if kind in _NUMPY_SCALAR_TYPES:
            dtype_str, _, offset, nbytes = self._array(np.asarray(value), path)
            return {"g": [dtype_str, offset, nbytes]}
        raise UnsupportedValue(type_name(value), path, _hint(value))

    def _array(self, array: np.ndarray, path: str) -> list:
        dtype = array.dtype
        if dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None:
            raise UnsupportedValue(f"numpy array of dtype {dtype}", path,
                                   "only numeric and bool arrays can be returned")
        data = np.ascontiguousarray(array).tobytes()
        offset = len(self.blob)
        self.blob += data
        return [dtype.str, list(array.shape), offset, len(data)]


def encode(value, *, max_str_chars: int = 100_000) -> tuple[object, bytearray]:
    """Encode `value` as (JSON-able document, blob); raise UnsupportedValue if it is not plain."""
    encoder = _Encoder(max_str_chars)
    return encoder.encode(value), encoder.blob


class _Decoder:
    def __init__(self, blob: bytes | bytearray, readonly: bool, max_str_chars: int):
        self.blob = blob
        self.readonly = readonly
        self.max_str_chars = max_str_chars
        self.items = 0

    def decode(self, doc, depth: int = 0):
        self.items += 1
        if depth > MAX_DEPTH or self.items > MAX_ITEMS:
            raise MalformedMessage("value nested too deeply or too large")
        kind = type(doc)
        if kind is int and doc.bit_length() > MAX_INT_BITS:
            raise MalformedMessage("integer too long")  # as the encoder refuses it
        if doc is None or kind is bool or kind is int or kind is float:
            return doc
        if kind is str:
            if len(doc) > self.max_str_chars:
                raise MalformedMessage("string too long")
            return doc
        if kind is list:
            return [self.decode(v, depth + 1) for v in doc]
        if kind is not dict or len(doc) != 1:
            raise MalformedMessage(f"unexpected JSON value of type {kind.__name__}")
        (tag, body), = doc.items()
        if tag == "t" and type(body) is list:
            return tuple(self.decode(v, depth + 1) for v in body)
        if tag == "d" and type(body) is list:
            out = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                    raise MalformedMessage("bad dict entry")
                out[pair[0]] = self.decode(pair[1], depth + 1)
            return out
        if tag == "c" and type(body) is list and len(body) == 2:
            real, imag = body
            if type(real) is not float or type(imag) is not float:
                raise MalformedMessage("bad complex")
            return complex(real, imag)
        if tag == "a" and type(body) is list and len(body) == 4:
            return self._array(*body)
        if tag == "g" and type(body) is list and len(body) == 3:
            dtype_str, offset, nbytes = body
            return self._array(dtype_str, [], offset, nbytes)[()]
        raise MalformedMessage(f"unknown tag {tag!r}")

    def _array(self, dtype_str, shape, offset, nbytes) -> np.ndarray:
        dtype = _dtype(dtype_str)
        if (type(shape) is not list or len(shape) > MAX_DEPTH
                or any(type(n) is not int or not 0 <= n <= MAX_ARRAY_BYTES for n in shape)):
            raise MalformedMessage("bad shape")
        if type(offset) is not int or type(nbytes) is not int or offset < 0 or nbytes < 0:
            raise MalformedMessage("bad array extent")
        count, extent = 1, dtype.itemsize
        for n in shape:
            count *= n
            extent *= max(n, 1)
            if extent > MAX_ARRAY_BYTES:  # [0, 2**70]: no bytes, but no array numpy can make
                raise MalformedMessage("bad shape")
        if count * dtype.itemsize != nbytes or offset + nbytes > len(self.blob):
            raise MalformedMessage("array size does not match its bytes")
        raw = self.blob[offset:offset + nbytes]
        # bytes give an array whose WRITEABLE flag cannot be turned back on.
        buffer = bytes(raw) if self.readonly else bytearray(raw)
        try:
            return np.frombuffer(buffer, dtype=dtype, count=count).reshape(shape)
        except (ValueError, TypeError, OverflowError, MemoryError) as exc:  # checked above
            raise MalformedMessage(f"bad array ({type(exc).__name__})") from None


def _dtype(dtype_str) -> np.dtype:
    """A numeric or bool dtype from its `.str`; MalformedMessage for anything else (object,
    void, structured, sub-array, or a size numpy has no type of: '<f3', '<b8')."""
    if type(dtype_str) is not str or not _DTYPE_RE.fullmatch(dtype_str):
        raise MalformedMessage("bad dtype")
    try:
        dtype = np.dtype(dtype_str)
    except (TypeError, ValueError):
        raise MalformedMessage("bad dtype") from None
    if (dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None
            or dtype.hasobject or dtype.itemsize == 0):
        raise MalformedMessage("bad dtype")
    return dtype


def decode(doc, blob: bytes | bytearray, *, readonly: bool = False,
           max_str_chars: int = 100_000):
    """Rebuild a value from `encode`'s output; arrays are read-only when `readonly`."""
    return _Decoder(blob, readonly, max_str_chars).decode(doc)


def pack(message: dict, blob: bytes | bytearray = b"") -> bytes:
    """One framed message: header, JSON, blob (ValueError if an int is too long for text)."""
    text = json.dumps(message, separators=(",", ":")).encode()
    return HEADER.pack(MAGIC, len(text), len(blob)) + text + bytes(blob)


def parse_header(raw: bytes, max_bytes: int) -> tuple[int, int]:
    """Validate a frame header; return (JSON length, blob length)."""
    if len(raw) != HEADER.size:
        raise MalformedMessage("bad header")
    magic, json_len, blob_len = HEADER.unpack(raw)
    if magic != MAGIC:
        raise MalformedMessage("bad magic")
    if json_len > MAX_JSON_BYTES or blob_len > max_bytes:
        raise MalformedMessage("message too large")
    return json_len, blob_len


def parse_json(raw: bytes) -> dict:
    """Parse a frame's JSON part, which must be an object. Half a surrogate pair (JSON's
    `\\ud83d` escape, which `chr(0xd83d)` in a student's error message gives) is read as
    U+FFFD: no UTF-8 file or page can hold it, and the report is written to both."""
    try:
        text = raw.decode()
        if _SURROGATE_ESCAPE.search(text):  # rare: only then read it twice
            text = _LONE_SURROGATE.sub("\ufffd", json.dumps(json.loads(text),
                                                             ensure_ascii=False))
        message = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MalformedMessage(f"bad JSON: {exc}") from None
    if type(message) is not dict:
        raise MalformedMessage("message is not an object")
    return message


def read_exact(fd: int, n: int) -> bytes:
    """Blocking read of exactly n bytes from fd (the worker side); EOFError at end of stream."""
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_message(fd: int, max_bytes: int) -> tuple[dict, bytes]:
    """Blocking read of one framed message (the worker side)."""
    json_len, blob_len = parse_header(read_exact(fd, HEADER.size), max_bytes)
    message = parse_json(read_exact(fd, json_len))
    return message, read_exact(fd, blob_len)

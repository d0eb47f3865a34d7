"""The wire format carries plain data only and rejects anything else, from either side."""

from __future__ import annotations

import json

import numpy as np
import pytest

from autograder.sandbox import codec


def roundtrip(value, readonly=False):
    doc, blob = codec.encode(value)
    return codec.decode(json.loads(json.dumps(doc)), bytes(blob), readonly=readonly)


def test_plain_values_survive_a_round_trip_with_their_types():
    value = [None, True, 3, -2.5, float("inf"), 1 + 2j, "é", (1, [2]), {"a": (3,)},
             np.float32(1.5), np.int8(-3), np.bool_(True)]
    back = roundtrip(value)
    assert back[:9] == value[:9]
    assert [type(v) for v in back] == [type(v) for v in value]
    assert back[9] == np.float32(1.5) and back[10] == np.int8(-3)


@pytest.mark.parametrize("dtype", ["<f8", ">f4", "<i2", "|u1", "|b1", "<c16"])
def test_arrays_keep_dtype_shape_and_values(dtype):
    array = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    back = roundtrip(array)
    assert back.dtype == array.dtype and back.shape == (3, 4) and back.flags.writeable
    np.testing.assert_array_equal(back, array)


def test_non_contiguous_and_empty_arrays_cross():
    array = np.arange(20.0).reshape(4, 5)[:, ::2].T  # (3, 4), not contiguous
    np.testing.assert_array_equal(roundtrip(array), array)
    assert roundtrip(np.zeros((0, 3))).shape == (0, 3)


def test_read_only_decoding_gives_arrays_that_cannot_be_made_writable():
    back = roundtrip(np.ones(3), readonly=True)
    assert not back.flags.writeable
    with pytest.raises(ValueError):
        back.flags.writeable = True


def _nested(depth: int) -> list:
    value: list = [1]
    for _ in range(depth):
        value = [value]
    return value


class Sub(np.ndarray):
    pass


class EqualsAnything(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


@pytest.mark.parametrize("value", [
    np.zeros(2).view(Sub), np.ma.masked_array([1.0]), EqualsAnything(1.0), object(),
    {1: 2}, np.array(["x"]), np.array([object()]), np.zeros(2, dtype=[("a", "<f8")]),
    np.datetime64("2020-01-01"), 2**20000, _nested(40),
], ids=lambda value: type(value).__name__)
def test_values_that_are_not_plain_data_are_refused(value):
    with pytest.raises(codec.UnsupportedValue):
        codec.encode(value)


def test_refusal_names_the_type_and_where_it_sits():
    with pytest.raises(codec.UnsupportedValue) as refused:
        codec.encode((np.ones(2), np.ma.masked_array([1.0])))
    assert refused.value.type_name == "numpy.ma.MaskedArray"
    assert refused.value.path == "[1]"


@pytest.mark.parametrize("doc", [
    {"a": ["|O8", [1], 0, 8]},  # object dtype
    {"a": ["<U1", [1], 0, 4]},  # strings
    {"a": ["<f8", [2], 0, 8]},  # size does not match the bytes
    {"a": ["<f8", [1], 8, 8]},  # past the end of the blob
    {"a": ["<f8", [-1], 0, 8]},
    {"x": 1},  # unknown tag
    {"t": [1], "d": []},  # two tags
    {"c": ["1", 2.0]},
    {"d": [[1, 2]]},  # non-string key
])
def test_decoding_rejects_malformed_documents(doc):
    with pytest.raises(codec.MalformedMessage):
        codec.decode(doc, b"\0" * 8)


def test_frames_with_bad_magic_or_oversized_lengths_are_rejected():
    header = codec.pack({"op": "x"})[: codec.HEADER.size]
    assert codec.parse_header(header, 1 << 20) == (len(b'{"op":"x"}'), 0)
    with pytest.raises(codec.MalformedMessage):
        codec.parse_header(b"EVIL" + header[4:], 1 << 20)
    with pytest.raises(codec.MalformedMessage):
        codec.parse_header(codec.HEADER.pack(codec.MAGIC, 10, 1 << 30), 1 << 20)
    with pytest.raises(codec.MalformedMessage):
        codec.parse_json(b"[1, 2]")


def test_a_string_longer_than_the_limit_is_malformed_wherever_it_sits():
    # the worker's encoder refuses such a string; a forged reply must not bring one either
    assert codec.decode("x" * 50, b"", max_str_chars=50) == "x" * 50
    for doc in ("x" * 51, ["x" * 51], {"d": [["key", "x" * 51]]}, {"t": ["x" * 51]}):
        with pytest.raises(codec.MalformedMessage):
            codec.decode(doc, b"", max_str_chars=50)


def test_a_json_part_longer_than_the_limit_is_rejected_whatever_the_blob_allows():
    limit = codec.MAX_JSON_BYTES
    assert codec.parse_header(codec.HEADER.pack(codec.MAGIC, limit, 0), 1 << 40) == (limit, 0)
    for claimed in (limit + 1, 2**63):  # the reader would wait for, and hold, that much text
        with pytest.raises(codec.MalformedMessage):
            codec.parse_header(codec.HEADER.pack(codec.MAGIC, claimed, 0), 1 << 40)


# Hostile fields for an array's [dtype, shape, offset, nbytes], as a forged reply may send
# them: each must be refused as MalformedMessage, never as numpy's own ValueError/TypeError.
HOSTILE_DTYPES = ["<f3", "<b8", "<i3", "<c4", "<u0", "<f0", "|V8", "|O8", "<M8", "<m8",
                  "<U1", "|S1", "<f8\n", " <f8", "<f8 ", "f8", "", "<f99", "<i99",
                  "[('a','<f8')]", "(2,)<f8", "<f8,<f8", 8, None, ["<f8"], {"d": "<f8"}]
HOSTILE_SHAPES = [[0, 2**70], [2**70, 0], [0] + [2**40] * 2, [0, 2**62, 2], [-1], [2**70],
                  [True], [1.0], ["1"], [None], [[1]], [1] * 33, "8", 8, None, {"d": []},
                  [0, 10**4000]]
HOSTILE_EXTENTS = [-1, 2**70, 1.0, "0", None, True, [0], 10**4000]


def _array_doc(dtype="<f8", shape=(1,), offset=0, nbytes=8):
    return {"a": [dtype, list(shape) if isinstance(shape, tuple) else shape, offset, nbytes]}


@pytest.mark.parametrize("doc", [
    *(_array_doc(dtype=d) for d in HOSTILE_DTYPES),
    *(_array_doc(shape=s, nbytes=0) for s in HOSTILE_SHAPES),
    *(_array_doc(shape=s) for s in HOSTILE_SHAPES),
    *(_array_doc(offset=x) for x in HOSTILE_EXTENTS),
    *(_array_doc(nbytes=x) for x in HOSTILE_EXTENTS),
    *({"g": [d, 0, 8]} for d in HOSTILE_DTYPES),
    {"g": ["<f8", -1, 8]}, {"g": ["<f8", 0, 16]}, {"g": ["<f8", 0]},
    {"a": ["<f8", [1], 0]}, {"a": "<f8"}, {"a": None}, {"t": "ab"}, {"t": None},
    {"d": [["a", 1, 2]]}, {"d": [["a"]]}, {"d": [[None, 1]]}, {"d": [[["a"], 1]]},
    {"d": {"a": 1}}, {"d": [{"a": 1}]}, {"c": [1.0]}, {"c": [1, 2]}, {"c": [None, 1.0]},
    {"c": "1+2j"}, {}, {"": 1}, 10**4000, -(10**4000), [10**4000],
])
def test_hostile_documents_are_only_ever_malformed_messages(doc):
    with pytest.raises(codec.MalformedMessage):
        codec.decode(doc, b"\0" * 16)
    with pytest.raises(codec.MalformedMessage):
        codec.decode(doc, b"\0" * 16, readonly=True)


def test_an_empty_array_of_a_huge_but_buildable_shape_still_crosses():
    zeros = codec.decode(_array_doc(shape=[0, 2**40], nbytes=0), b"")
    assert zeros.shape == (0, 2**40) and zeros.dtype == np.float64


@pytest.mark.parametrize("depth", [codec.MAX_DEPTH + 1, 500, 100_000])
def test_nesting_deeper_than_the_limit_is_malformed_in_any_spelling(depth):
    doc = 1
    for _ in range(min(depth, 1000)):
        doc = [doc]
    with pytest.raises(codec.MalformedMessage):
        codec.decode(doc, b"")
    for opener, closer in ((b"[", b"]"), (b'{"t":[', b"]}")):
        with pytest.raises(codec.MalformedMessage):  # the frame's JSON itself
            codec.decode(codec.parse_json(b'{"v":' + opener * depth + b"1"
                                          + closer * depth + b"}")["v"], b"")


@pytest.mark.parametrize("raw", [b"\xff\xfe", b"", b"{", b'{"v": 1' + b"0" * 5000 + b"}",
                                 b'"text"', b"null", b"NaN", b'{"a": [1, 2,]}'])
def test_a_frames_json_that_is_not_an_object_of_json_is_malformed(raw):
    with pytest.raises(codec.MalformedMessage):
        codec.parse_json(raw)


@pytest.mark.parametrize("raw", [b"", b"SDPA", b"SDPA" + b"\0" * 30])
def test_a_header_of_the_wrong_size_is_malformed(raw):
    with pytest.raises(codec.MalformedMessage):
        codec.parse_header(raw, 1 << 20)


def test_half_a_surrogate_pair_in_a_frame_is_read_as_a_replacement_character():
    # chr(0xd83d) in a student's error message crosses as JSON's "\ud83d"; the report that
    # holds it is written as UTF-8, which cannot hold it (the submission was failed, every run)
    raw = json.dumps({"error": {"message": "bad \ud83d", "type": "ValueError"},
                      "\udc00": ["ok \U0001f600", "\\ud83d"]}).encode()
    message = codec.parse_json(raw)
    assert message == {"error": {"message": "bad \ufffd", "type": "ValueError"},
                       "\ufffd": ["ok \U0001f600", "\\ud83d"]}
    json.dumps(message, ensure_ascii=False).encode("utf-8")

"""The pictures a cell drew, read on the trusted side from a worker's reply.

The worker sends each figure a cell left open as PNG bytes in the reply's blob, with
`"images": [[offset, length], ...]` in the reply. Nothing in the reply is trusted: a span that
is not two ints inside the blob, a file that is not a PNG (signature and IHDR header), one
larger than `MAX_PNG_BYTES` or wider or taller than `MAX_PNG_SIDE` pixels is dropped, and at
most `MAX_PNGS` are kept. The bytes are never decoded here: they are only shown later, as an
`<img>` of a base64 `data:` URL, which a browser draws and never runs.
"""

from __future__ import annotations

import struct

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_PNG_BYTES = 200_000
MAX_PNG_SIDE = 2048
MAX_PNGS = 4
SUBMISSION_PNGS = 12
SUBMISSION_PNG_BYTES = 1_000_000


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a PNG from its IHDR chunk, or None if it does not start as one."""
    if len(data) < 33 or not data.startswith(PNG_SIGNATURE):
        return None
    length, kind = struct.unpack(">I4s", data[8:16])
    if length != 13 or kind != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def is_acceptable_png(data: bytes) -> bool:
    size = png_size(data)
    if size is None or len(data) > MAX_PNG_BYTES:
        return False
    width, height = size
    return 0 < width <= MAX_PNG_SIDE and 0 < height <= MAX_PNG_SIDE


def read_pngs(spans, blob: bytes) -> list[bytes]:
    """The acceptable PNGs named by `spans` (the reply's "images") in `blob`, in order."""
    if type(spans) is not list:
        return []
    pngs = []
    for span in spans:
        if len(pngs) >= MAX_PNGS:
            break
        if type(span) is not list or len(span) != 2 or not all(type(v) is int for v in span):
            continue
        offset, length = span
        if offset < 0 or length <= 0 or offset + length > len(blob):
            continue
        data = bytes(blob[offset:offset + length])
        if is_acceptable_png(data):
            pngs.append(data)
    return pngs


class FigureBudget:
    """The figures one submission may still keep (`SUBMISSION_PNGS`, `SUBMISSION_PNG_BYTES`)."""

    def __init__(self):
        self.count_left, self.bytes_left = SUBMISSION_PNGS, SUBMISSION_PNG_BYTES

    def keep(self, pngs: list[bytes]) -> tuple[list[bytes], int]:
        """The PNGs that fit what is left, in order, and how many did not."""
        kept = []
        for png in pngs:
            if self.count_left > 0 and len(png) <= self.bytes_left:
                kept.append(png)
                self.count_left, self.bytes_left = self.count_left - 1, self.bytes_left - len(png)
        return kept, len(pngs) - len(kept)

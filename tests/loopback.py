"""Test servers listen on loopback only, on ports that are bound, never guessed.

A port found free and then closed can be taken by anything else before the server binds
it. So either the server binds port 0 itself and says which port it got (Dask's scheduler
file, Jupyter's runtime file), or, for a server that must be told its port (PostgreSQL),
`reserved_port` holds the port bound (SO_REUSEADDR, not listening) until the server is
up: nothing else can bind it meanwhile, while the server, which binds with SO_REUSEADDR
as every TCP server does, can. `unused_address` is an address where nothing listens.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

LOOPBACK = "127.0.0.1"


@contextmanager
def reserved_port() -> Iterator[int]:
    """A loopback port held for a server that is started inside the block."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, 0))
        yield sock.getsockname()[1]


@contextmanager
def unused_address() -> Iterator[tuple[str, int]]:
    """A loopback address bound but not listening for the block: connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        yield sock.getsockname()

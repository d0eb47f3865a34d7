"""Landlock for student code: read anywhere it can see, write only to its private temporaries.

Defence in depth behind the mount namespace (which already shows nothing but the runtime).
The ruleset handles every file access right the kernel's Landlock ABI knows: beneath `/`
only reading and executing are allowed, beneath `/tmp` and `/dev/shm` (private tmpfs, the
workdir among them) everything but device nodes, and a few devices may be read and written.
So a write to /proc/self/..., or to any file a mount left writable, fails with EACCES.
From ABI 4 every TCP bind and connect is refused; from ABI 6 abstract UNIX sockets and
signals are scoped to the submission's own processes.

Shipped into the zygote as source: standard library only.
"""

from __future__ import annotations

import ctypes
import os
import struct

from . import kernel

CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MAKE_SYM, REFER, TRUNCATE, IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ_ONLY = EXECUTE | READ_FILE | READ_DIR
WRITABLE_TREES = ("/tmp", "/dev/shm")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 where Landlock is missing or disabled."""
    if not kernel.LINUX:
        return 0
    try:
        return kernel.syscall("landlock_create_ruleset", None, ctypes.c_size_t(0),
                              ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError:
        return 0


def handled_file_access(abi: int) -> int:
    """Every file access right ABI `abi` knows (bits 0-12 from ABI 1, then one or so per ABI)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def restrict(abi: int) -> None:
    """Restrict this process and its future children; needs no_new_privs and ABI >= 1."""
    handled = handled_file_access(abi)
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("QQQ", handled, net, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = kernel.syscall("landlock_create_ruleset", ctypes.c_char_p(attr),
                             ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        _allow(ruleset, "/", READ_ONLY & handled)
        for tree in WRITABLE_TREES:
            _allow(ruleset, tree, handled & ~(MAKE_CHAR | MAKE_BLOCK | IOCTL_DEV))
        for device in DEVICES:
            if os.path.exists(device):
                _allow(ruleset, device, READ_FILE | WRITE_FILE)
        kernel.syscall("landlock_restrict_self", ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = struct.pack("=Qi", access, fd)  # struct landlock_path_beneath_attr is packed
        kernel.syscall("landlock_add_rule", ctypes.c_int(ruleset),
                       ctypes.c_int(RULE_PATH_BENEATH), ctypes.c_char_p(rule),
                       ctypes.c_uint32(0))
    finally:
        os.close(fd)

"""The sandbox's kernel-facing parts on their own: system call numbers, the seccomp program's
decisions, Landlock's rights per ABI, where cgroups are found. (That each is in force in a
running sandbox is checked by tests/test_sandbox_isolation.py.)"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.sandbox import cgroups, kernel, landlock, seccomp

HEADERS = {"x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
           "aarch64": Path("/usr/include/asm-generic/unistd.h")}


@pytest.mark.parametrize("machine", sorted(kernel.SYSCALLS))
def test_system_call_numbers_match_the_kernel_headers(machine):
    header = HEADERS[machine]
    if not header.exists():
        pytest.skip(f"{header} is not installed")
    defined = {name: int(number) for name, number in
               re.findall(r"#define __NR(?:3264)?_(\w+)\s+(\d+)\b", header.read_text())}
    table = kernel.SYSCALLS[machine]
    known = {name: number for name, number in table.items() if name in defined}
    assert known == {name: defined[name] for name in known}
    assert len(known) >= len(table) - 8  # a few (iopl, _sysctl...) exist on x86_64 only


def _run_filter(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    """Evaluate the classic BPF program on one system call (the subset the filter uses)."""
    data = struct.pack("iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = [struct.unpack("HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:  # ld [k]
            accumulator = struct.unpack_from("I", data, k)[0]
            pc += 1
        elif op in (0x15, 0x35, 0x45):  # jeq, jge, jset
            taken = {0x15: accumulator == k, 0x35: accumulator >= k,
                     0x45: bool(accumulator & k)}[op]
            pc += 1 + (jt if taken else jf)
        elif op == 0x06:  # ret k
            return k
        else:
            raise AssertionError(f"unexpected BPF instruction {op:#x}")


@pytest.mark.parametrize("machine", sorted(kernel.AUDIT_ARCH))
def test_the_seccomp_filter_decides_as_documented(monkeypatch, machine):
    monkeypatch.setattr(kernel, "MACHINE", machine)
    program, numbers, arch = seccomp.build(), kernel.SYSCALLS[machine], kernel.AUDIT_ARCH[machine]
    assert len(program) % 8 == 0 and len(program) // 8 < 256
    eperm = seccomp.RET_ERRNO | 1

    def decide(name, arg0=0, audit_arch=arch):
        return _run_filter(program, numbers[name], audit_arch, arg0)

    for name in seccomp.DENIED:
        if name in numbers:
            assert decide(name) == eperm, name
    for name in ("capset", "landlock_create_ruleset"):  # only ever narrows the caller
        assert decide(name) == seccomp.RET_ALLOW
    assert decide("clone", 0x11) == seccomp.RET_ALLOW  # fork(): SIGCHLD
    assert decide("clone", 0x003D0F00) == seccomp.RET_ALLOW  # a thread
    for flag in (kernel.CLONE_NEWUSER, kernel.CLONE_NEWNET, kernel.CLONE_NEWNS):
        assert decide("clone", 0x11 | flag) == eperm
    assert decide("clone3") == seccomp.RET_ERRNO | 38  # ENOSYS: the C library falls back
    assert decide("socket", 1) == seccomp.RET_ALLOW  # AF_UNIX
    for family in (2, 10, 16, 17):  # AF_INET, AF_INET6, AF_NETLINK, AF_PACKET
        assert decide("socket", family) == eperm
    assert decide("socket", 1, audit_arch=0x40000003) == seccomp.RET_KILL_PROCESS  # i386
    if machine == "x86_64":
        assert _run_filter(program, 0x40000000 | 41, arch) == seccomp.RET_KILL_PROCESS  # x32


def test_landlock_handles_every_right_its_abi_knows():
    assert landlock.handled_file_access(1) == (1 << 13) - 1
    assert landlock.handled_file_access(3) == (1 << 15) - 1
    assert landlock.handled_file_access(7) == (1 << 16) - 1


# Landlock alone, in a process of its own: the sandbox's other layers (namespaces, seccomp)
# refuse all of this too, so only here can a missing Landlock rule show.
LANDLOCK_PROBE = r"""
import json, os, socket, sys
from autograder.sandbox import kernel, landlock
port, abstract, outside = int(sys.argv[1]), sys.argv[2], sys.argv[3]
kernel.no_new_privs()
landlock.restrict(landlock.abi_version())
found = {}
def attempt(name, action):
    try:
        action()
        found[name] = 0
    except OSError as exc:
        found[name] = exc.errno
def unix():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect("\0" + abstract)
attempt("tcp connect", lambda: socket.create_connection(("127.0.0.1", port), timeout=5))
attempt("tcp bind", lambda: socket.socket().bind(("127.0.0.1", 0)))
attempt("abstract unix", unix)
attempt("signal", lambda: os.kill(os.getppid(), 0))
attempt("write outside", lambda: open(outside, "w").close())
attempt("read outside", lambda: os.listdir(os.path.dirname(outside)))
attempt("write /tmp", lambda: open(os.path.join("/tmp", os.path.basename(outside)), "w").close())
print(json.dumps(found))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or landlock.abi_version() < 6,
                    reason="needs Landlock ABI 6 (TCP rules, scoped sockets and signals)")
def test_landlock_alone_refuses_tcp_abstract_sockets_signals_and_writes_outside_tmp():
    server, unix = socket.socket(), socket.socket(socket.AF_UNIX)
    server.bind(("127.0.0.1", 0))
    server.listen()
    abstract = f"sdpa-landlock-{os.getpid()}"
    unix.bind("\0" + abstract)
    unix.listen()
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))
    name = f"sdpa-landlock-{os.getpid()}"
    try:
        done = subprocess.run([sys.executable, "-c", LANDLOCK_PROBE, str(server.getsockname()[1]),
                               abstract, str(folder / name)], capture_output=True, text=True,
                              timeout=60, cwd=Path(__file__).resolve().parent.parent)
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        assert not (folder / name).exists()
    finally:
        server.close()
        unix.close()
        for leftover in (folder / name, Path("/tmp") / name):
            leftover.unlink(missing_ok=True)
        folder.rmdir()
    assert found == {"tcp connect": errno.EACCES, "tcp bind": errno.EACCES,
                     "abstract unix": errno.EPERM, "signal": errno.EPERM,
                     "write outside": errno.EACCES, "read outside": 0, "write /tmp": 0}


V1_MOUNTINFO = """\
22 1 254:1 / / rw,relatime - ext4 /dev/vda rw
30 22 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
33 30 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
34 30 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_MEMBERSHIP = "8:pids:/\n4:memory:/jobs/42\n1:cpu:/\n0::/\n"


def test_cgroup_v1_hierarchies_are_found_below_the_process_own_cgroups():
    version, dirs = cgroups.locate(V1_MOUNTINFO, V1_MEMBERSHIP)
    assert version == "v1"
    assert dirs == {"/sys/fs/cgroup/cpu": ["cpu"], "/sys/fs/cgroup/memory/jobs/42": ["memory"],
                    "/sys/fs/cgroup/pids": ["pids"]}


def test_cgroup_v2_is_used_only_when_it_offers_the_three_controllers(tmp_path):
    own = tmp_path / "user.slice" / "grader.scope"
    own.mkdir(parents=True)
    mountinfo = f"40 22 0:35 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    (own / "cgroup.controllers").write_text("cpuset io memory pids\n")
    assert cgroups.locate(mountinfo, "0::/user.slice/grader.scope\n") == ("", {})
    (own / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    assert cgroups.locate(mountinfo, "0::/user.slice/grader.scope\n") == (
        "v2", {str(own): ["memory", "pids", "cpu"]})


def test_a_mount_point_with_a_space_is_decoded():
    mounts = cgroups._mounts("31 30 0:27 / /sys/fs/my\\040cgroups rw - cgroup cgroup rw,pids\n")
    assert mounts[0][0] == "/sys/fs/my cgroups"


def test_the_reason_no_cgroup_can_be_made_is_the_same_in_every_process(monkeypatch, tmp_path):
    """An ordinary user's refusal names the hierarchy, not the pool's own random folder, so
    two graders' warnings are equal (they are compared and grouped across a class)."""
    hierarchy = tmp_path / "cpu"
    hierarchy.mkdir()
    monkeypatch.setattr(cgroups, "locate", lambda info, member: ("v1", {str(hierarchy): ["cpu"]}))

    def refused(path, *args):
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(cgroups.os, "mkdir", refused)
    reasons = {cgroups.Cgroups.create()[1] for _ in range(3)}
    assert reasons == {f"cgroups cannot be created here (Permission denied: {hierarchy})"}

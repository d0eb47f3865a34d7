"""Thin ctypes wrappers over the Linux system calls the sandbox needs, and their constants.

Shipped into the zygote as source: standard library only. Every wrapper raises OSError with
the call's name on failure. Nothing here decides policy; `isolation` and `rootfs` do.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACE_FLAGS = (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER
                   | CLONE_NEWPID | CLONE_NEWNET)

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_SILENT = 32768
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2
# Mount options as /proc/self/mountinfo spells them: kept when remounting a bind (a user
# namespace may not clear a flag the host set, bubblewrap's bind-mount.c does the same).
MOUNT_OPTION_FLAGS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV,
                      "noexec": MS_NOEXEC, "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME,
                      "relatime": MS_RELATIME}

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# noroot + locked, setuid fixup locked on, keep-caps locked off, ambient raise off + locked
SECUREBITS_LOCKED_DOWN = 0x01 | 0x02 | 0x08 | 0x20 | 0x40 | 0x80
LINUX_CAPABILITY_VERSION_3 = 0x20080522

# System call numbers the sandbox calls itself or filters (seccomp), per architecture.
# tests/test_sandbox_kernel.py checks them against the kernel headers when those are installed.
SYSCALLS = {
    "x86_64": {
        "socket": 41, "socketpair": 53, "clone": 56, "ptrace": 101, "syslog": 103,
        "capset": 126, "uselib": 134, "personality": 135, "vhangup": 153, "pivot_root": 155,
        "_sysctl": 156, "adjtimex": 159, "chroot": 161, "acct": 163, "settimeofday": 164,
        "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
        "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173,
        "create_module": 174, "init_module": 175, "delete_module": 176,
        "get_kernel_syms": 177, "query_module": 178, "quotactl": 179, "nfsservctl": 180,
        "lookup_dcookie": 212, "clock_settime": 227, "kexec_load": 246, "add_key": 248,
        "request_key": 249, "keyctl": 250, "unshare": 272, "move_pages": 279,
        "perf_event_open": 298, "fanotify_init": 300, "name_to_handle_at": 303,
        "open_by_handle_at": 304, "clock_adjtime": 305, "setns": 308,
        "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "finit_module": 313,
        "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "clone3": 435,
        "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442, "quotactl_fd": 443,
        "landlock_create_ruleset": 444, "landlock_add_rule": 445,
        "landlock_restrict_self": 446,
    },
    "aarch64": {
        "lookup_dcookie": 18, "umount2": 39, "mount": 40, "pivot_root": 41, "nfsservctl": 42,
        "chroot": 51, "vhangup": 58, "quotactl": 60, "acct": 89, "capset": 91,
        "personality": 92, "unshare": 97, "kexec_load": 104, "init_module": 105,
        "delete_module": 106, "clock_settime": 112, "syslog": 116, "ptrace": 117,
        "reboot": 142, "sethostname": 161, "setdomainname": 162, "settimeofday": 170,
        "adjtimex": 171, "socket": 198, "socketpair": 199, "add_key": 217, "request_key": 218,
        "keyctl": 219, "clone": 220, "swapon": 224, "swapoff": 225, "move_pages": 239,
        "perf_event_open": 241, "fanotify_init": 262, "name_to_handle_at": 264,
        "open_by_handle_at": 265, "clock_adjtime": 266, "setns": 268,
        "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "finit_module": 273,
        "bpf": 280, "userfaultfd": 282, "kexec_file_load": 294, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "clone3": 435,
        "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442, "quotactl_fd": 443,
        "landlock_create_ruleset": 444, "landlock_add_rule": 445,
        "landlock_restrict_self": 446,
    },
}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

MACHINE = platform.machine()
LINUX = sys.platform.startswith("linux")
_libc = ctypes.CDLL(None, use_errno=True) if LINUX else None
if _libc is not None:
    _libc.syscall.restype = ctypes.c_long


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def syscall_number(name: str) -> int:
    """This machine's number for a system call; OSError where the table does not know it."""
    try:
        return SYSCALLS[MACHINE][name]
    except KeyError:
        raise OSError(38, f"{name}: no system call number known on {MACHINE}") from None


def syscall(name: str, *args) -> int:
    return _check(_libc.syscall(ctypes.c_long(syscall_number(name)), *args), name)


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_libc.setns(fd, nstype), "setns")


def prctl(option: int, arg2: int = 0, what: str = "prctl") -> int:
    return _check(_libc.prctl(option, ctypes.c_ulong(arg2), ctypes.c_ulong(0),
                              ctypes.c_ulong(0), ctypes.c_ulong(0)), what)


def prctl_pointer(option: int, arg2: int, data: bytes, what: str) -> int:
    """prctl whose third argument points at `data` (a struct the caller packed)."""
    return _check(_libc.prctl(option, ctypes.c_ulong(arg2), ctypes.c_char_p(data),
                              ctypes.c_ulong(0), ctypes.c_ulong(0)), what)


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    def arg(text):
        return None if text is None else os.fsencode(text)

    _check(_libc.mount(arg(source), arg(target), arg(fstype), ctypes.c_ulong(flags), arg(data)),
           f"mount {target}")


def umount(target: str) -> None:
    _check(_libc.umount2(os.fsencode(target), MNT_DETACH), f"umount {target}")


def write_file(path: str, text: str) -> None:
    """Write a /proc or /sys file in one write() (id maps, cgroup files refuse partial ones)."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def limit_capabilities() -> None:
    """Empty the bounding and ambient sets and lock the securebits (no root semantics, no
    keeping capabilities across a change of uid). Needs CAP_SETPCAP: call while privileged."""
    with open("/proc/sys/kernel/cap_last_cap") as last_cap:
        last = int(last_cap.read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap, "drop bounding capability")
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, "clear ambient capabilities")
    prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_DOWN, "lock securebits")


def clear_capabilities() -> None:
    """Empty the effective, permitted and inheritable sets."""
    header = struct.pack("Ii", LINUX_CAPABILITY_VERSION_3, 0)
    data = bytes(24)  # two {effective, permitted, inheritable} words, all zero
    syscall("capset", ctypes.c_char_p(header), ctypes.c_char_p(data))


def no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1, "no_new_privs")


def die_with_parent(signum: int) -> None:
    """Receive `signum` when the parent dies (cleared by any later change of credentials)."""
    prctl(PR_SET_PDEATHSIG, signum, "pdeathsig")


def set_dumpable() -> None:
    prctl(PR_SET_DUMPABLE, 1, "dumpable")


def process_status() -> dict[str, str]:
    """This process's /proc/self/status as a dict (Uid, CapEff, NoNewPrivs, Seccomp, ...)."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields

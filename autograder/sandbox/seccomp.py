"""A seccomp filter for student code: the system calls no submission needs fail with EPERM.

Defence in depth behind the namespaces: a submission keeps everything numpy, matplotlib and
ordinary Python use, and loses the calls that reshape its own isolation (new namespaces,
mounts, chroot), reach into other processes or the kernel (ptrace, process_vm_*, bpf,
perf_event_open, keyctl, modules, kexec, io_uring, open_by_handle_at, userfaultfd) or the
network (sockets of any family but AF_UNIX). clone() with a namespace flag fails too, and
clone3() reports ENOSYS so that the C library falls back to clone(), whose flags the filter
can read. A system call of another architecture (x32, i386 on x86_64) kills the process.

Built as classic BPF by hand (no libseccomp) and installed with prctl once no_new_privs is
set. Shipped into the zygote as source: standard library only.
"""

from __future__ import annotations

import ctypes
import struct

from . import kernel

DENIED = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise",
    "kcmp", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    "init_module", "finit_module", "delete_module", "create_module", "get_kernel_syms",
    "query_module", "kexec_load", "kexec_file_load", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
    "fanotify_init", "acct", "swapon", "swapoff", "reboot", "syslog", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "iopl",
    "ioperm", "quotactl", "quotactl_fd", "vhangup", "uselib", "nfsservctl", "_sysctl",
    "move_pages",
)
AF_UNIX = 1
EPERM = 1
ENOSYS = 38
X32_SYSCALL_BIT = 0x40000000

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
SECCOMP_MODE_FILTER = 2
PR_SET_SECCOMP = 22
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (args[0]'s low word, LE)


class _Program:
    """A list of BPF instructions whose jumps name labels, resolved at the end."""

    def __init__(self):
        self.code: list[tuple[int, object, object, int]] = []
        self.labels: dict[str, int] = {}

    def op(self, code: int, k: int, jt: object = 0, jf: object = 0) -> None:
        self.code.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assemble(self) -> bytes:
        def offset(target, at):
            if isinstance(target, int):
                return target
            jump = self.labels[target] - at - 1
            if not 0 <= jump <= 255:
                raise ValueError(f"seccomp jump to {target} out of range")
            return jump

        return b"".join(struct.pack("HBBI", code, offset(jt, at), offset(jf, at), k)
                        for at, (code, jt, jf, k) in enumerate(self.code))


def available() -> bool:
    """Whether this kit has a filter for this machine's architecture."""
    return kernel.LINUX and kernel.MACHINE in kernel.AUDIT_ARCH


def build() -> bytes:
    """The filter for this machine, as the bytes of a sock_filter array."""
    numbers = kernel.SYSCALLS[kernel.MACHINE]
    program = _Program()
    program.op(_LD_W_ABS, _ARCH)
    program.op(_JEQ_K, kernel.AUDIT_ARCH[kernel.MACHINE], 0, "kill")
    program.op(_LD_W_ABS, _NR)
    if kernel.MACHINE == "x86_64":
        program.op(_JGE_K, X32_SYSCALL_BIT, "kill", 0)
    program.op(_JEQ_K, numbers["clone"], "clone", 0)
    program.op(_JEQ_K, numbers["clone3"], "nosys", 0)
    program.op(_JEQ_K, numbers["socket"], "socket", 0)
    for name in DENIED:
        if name in numbers:
            program.op(_JEQ_K, numbers[name], "deny", 0)
    program.op(_RET_K, RET_ALLOW)
    program.label("clone")
    program.op(_LD_W_ABS, _ARG0)
    program.op(_JSET_K, kernel.NAMESPACE_FLAGS, "deny", 0)
    program.op(_RET_K, RET_ALLOW)
    program.label("socket")
    program.op(_LD_W_ABS, _ARG0)
    program.op(_JEQ_K, AF_UNIX, 0, "deny")
    program.op(_RET_K, RET_ALLOW)
    program.label("deny")
    program.op(_RET_K, RET_ERRNO | EPERM)
    program.label("nosys")
    program.op(_RET_K, RET_ERRNO | ENOSYS)
    program.label("kill")
    program.op(_RET_K, RET_KILL_PROCESS)
    return program.assemble()


def install() -> None:
    """Load the filter into this process (and every process it starts); needs no_new_privs."""
    code = build()
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("HxxxxxxP", len(code) // 8, ctypes.addressof(buffer))
    kernel.prctl_pointer(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, "seccomp")

"""Guarantees of the sandbox's isolation that only a mutant showed no quick test held
(docs/mutation-score.md): the private /dev/shm mounted noexec, the student's file size limit
in megabytes, an IPC namespace of the worker's own, and the worker's refusal to serve
without no_new_privs. (tests/test_sandbox_isolation.py holds the first three on all three
graders too, but only as a slow test.)"""

from __future__ import annotations

import ast
import errno
import os
import resource
import sys
import textwrap

import pytest

from autograder.sandbox import Cell, Limits, Sandbox, SandboxPool, isolation

FAST = Limits(cell_seconds=5.0, call_seconds=1.0, interrupt_grace_seconds=0.3, cpu_seconds=10,
              memory_mb=256, max_restarts=4)
MiB = 2**20
NAMESPACES = ("user", "mnt", "net", "ipc", "pid_for_children")
linux_root = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0,
    reason="namespace isolation needs Linux and root")


@linux_root
def test_dev_shm_is_noexec_a_file_of_megabytes_fits_and_each_worker_has_its_own_ipc():
    """isolation.py: /dev/shm's flags (`MS_NODEV | MS_NOEXEC` -> `<<` left it exec-able), the
    file size limit (`disk_mb * 2**20` -> `2*20`, `2+20`, `2-20`: bytes, not MiB),
    CLONE_NEWIPC (`|` -> `%` dropped it from the unshare); /dev/shm's size (`SHM_MB = 16` ->
    `15`: cgroups.py makes room for 16 MiB of it), Landlock (`if landlock_abi >= 1` -> `if
    not ...` skipped it), and the zygote's own namespaces (`NEWNET | NEWIPC` -> `NEWNET %
    NEWIPC` left it in the grader's network and IPC namespaces)."""
    source = textwrap.dedent(f"""\
        import ctypes, os, resource
        fsize = list(resource.getrlimit(resource.RLIMIT_FSIZE))
        mounts = {{line.split()[1]: line.split()[3].split(',') for line in open('/proc/mounts')}}
        with open('/tmp/four-mib', 'wb') as file:
            file.write(b'x' * {4 * MiB})
        size = os.path.getsize('/tmp/four-mib')
        ipc = os.readlink('/proc/self/ns/ipc')
        shm = os.statvfs('/dev/shm')
        shm_bytes = shm.f_blocks * shm.f_frsize
        # dumpable again, the worker owns its /proc/self files, and only Landlock (refusing
        # every write outside /tmp and /dev/shm) keeps it from writing one
        ctypes.CDLL(None, use_errno=True).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
        try:
            with open('/proc/self/comm', 'w') as comm:
                comm.write('renamed')
            comm = 'written'
        except OSError as exc:
            comm = exc.errno
        """)
    with SandboxPool() as pool:
        # two submissions open at once: their workers come from the same zygote
        sandboxes = [Sandbox([Cell(source, "cell 1")], limits=FAST, pool=pool)
                     for _ in range(2)]
        try:
            for sandbox in sandboxes:
                sandbox.start()
                assert [outcome.status for outcome in sandbox.outcomes] == ["ok"], \
                    sandbox.outcomes[0].error
            mounts, size = sandboxes[0].get("mounts"), sandboxes[0].get("size")
            fsize = sandboxes[0].get("fsize")
            ipcs = {sandbox.get("ipc") for sandbox in sandboxes}
            shm_bytes, comm = sandboxes[0].get("shm_bytes"), sandboxes[0].get("comm")
            zygote = {kind: os.readlink(f"/proc/{pool.zygote_pid}/ns/{kind}")
                      for kind in NAMESPACES}
        finally:
            for sandbox in sandboxes:
                sandbox.close()
    assert {"noexec", "nosuid", "nodev"} <= set(mounts["/dev/shm"])
    assert {"nosuid", "nodev"} <= set(mounts["/tmp"])
    assert size == 4 * MiB <= FAST.disk_mb * MiB
    assert fsize == [FAST.disk_mb * MiB] * 2  # the cap itself, as the grader set it
    assert len(ipcs) == 2 and os.readlink("/proc/self/ns/ipc") not in ipcs
    assert shm_bytes == 16 * MiB  # the 16 MiB cgroups.py adds to the memory limit for it
    if pool.layers["landlock"]:
        assert comm == errno.EACCES
    for kind in NAMESPACES:  # the zygote, not only its workers, is apart from the grader
        assert zygote[kind] != os.readlink(f"/proc/self/ns/{kind}"), kind


def _status(**changed: str) -> dict[str, str]:
    """/proc/self/status of a worker confined as intended (uid 1234567), but for `changed`."""
    status = {key: isolation.ZERO_CAPS for key in ("CapInh", "CapPrm", "CapEff", "CapBnd",
                                                   "CapAmb")}
    status.update(NoNewPrivs="1", Seccomp="2", Uid="1234567\t" * 3 + "1234567",
                  Gid="1234567\t" * 3 + "1234567", Groups="")
    return {**status, **changed}


@pytest.mark.parametrize("no_new_privs", ["0", "", "2"])
def test_a_worker_without_no_new_privs_refuses_to_serve(monkeypatch, no_new_privs):
    """isolation.py check_confined: `NoNewPrivs != "1"` -> `> "1"` let a worker whose
    no_new_privs is off ("0") serve."""
    monkeypatch.setattr(isolation.seccomp, "available", lambda: True)
    monkeypatch.setattr(isolation.kernel, "process_status", _status)
    isolation.check_confined(1234567, spare_uids=True)  # as intended: serves
    monkeypatch.setattr(isolation.kernel, "process_status",
                        lambda: _status(NoNewPrivs=no_new_privs))
    with pytest.raises(RuntimeError, match="no_new_privs is not set"):
        isolation.check_confined(1234567, spare_uids=True)


@pytest.mark.parametrize("ids", ["Uid", "Gid"])
@pytest.mark.parametrize("seen", ["0\t0\t0\t0", "9999999\t" * 3 + "9999999",
                                  "1234567\t1234567\t1234567\t0", "1234567"])
def test_a_worker_under_other_ids_than_the_students_refuses_to_serve(monkeypatch, ids, seen):
    """isolation.py check_confined: real, effective, saved and file-system ids all the
    student's (`!=` -> `<` compared the lists as text: ids that sort after the student's,
    9999999 for 1234567, served)."""
    monkeypatch.setattr(isolation.seccomp, "available", lambda: True)
    monkeypatch.setattr(isolation.kernel, "process_status", lambda: _status(**{ids: seen}))
    with pytest.raises(RuntimeError, match=f"{ids} is {seen}"):
        isolation.check_confined(1234567, spare_uids=True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")
def test_the_address_space_the_memory_limit_is_added_to_is_counted_in_bytes():
    """isolation.py address_space_bytes: pages times the page size (`*` -> `^` gave about the
    number of pages, so RLIMIT_AS held the worker to `memory_mb` in all, runtime included)."""
    with open("/proc/self/status") as status:
        vm_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    # read a moment apart: equal but for an allocation made in between
    assert abs(isolation.address_space_bytes() - vm_kib * 1024) <= vm_kib * 1024 // 100


LIMITS = {"cpu_seconds": 7, "memory_mb": 256, "processes": 64, "open_files": 128,
          "disk_mb": 3}


def _limited_child(baseline_bytes: int, mode: str, *which: int) -> list:
    """The limits `which` (getrlimit's pairs) of a child of this process once it applied
    LIMITS with `baseline_bytes` in `mode`."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: limit itself, say what it got, go
        try:
            isolation.apply_limits(LIMITS, baseline_bytes, mode)
            os.write(write, repr([resource.getrlimit(limit) for limit in which]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        got = answer.read()
    os.waitpid(pid, 0)
    return [tuple(pair) for pair in ast.literal_eval(got)]


def _within_hard(limit: int, value: int) -> tuple[int, int]:
    """(value, value), or this process's hard limit where that is lower (a limit never rises)."""
    hard = resource.getrlimit(limit)[1]
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    return value, value


forking = pytest.mark.skipif(not hasattr(os, "fork"), reason="sets the limits in a forked child")


@forking
def test_the_cpu_limit_leaves_a_second_between_sigxcpu_and_sigkill():
    """isolation.py apply_limits, in a child of this process: RLIMIT_CPU's hard limit a
    second above the soft one (`+ 1` -> `* 1` killed at once, without the SIGXCPU a handler
    may catch; `| 1` did so for an odd limit), the file size cap in MiB, no core files."""
    got = _limited_child(0, isolation.NAMESPACES,
                         resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE)
    assert got == [(7, 8), (3 * MiB, 3 * MiB), (0, 0)]


@forking
def test_the_memory_limit_is_added_to_the_address_space_the_worker_starts_with():
    """isolation.py apply_limits: RLIMIT_AS is the runtime's own address space plus
    `memory_mb` (`if baseline_bytes` -> `if not` left a measured worker unlimited), none
    where the space could not be measured (0: the limit would be `memory_mb` in all)."""
    before = resource.getrlimit(resource.RLIMIT_AS)
    baseline = 700 * MiB
    assert _limited_child(baseline, isolation.NAMESPACES, resource.RLIMIT_AS) == [
        _within_hard(resource.RLIMIT_AS, baseline + 256 * MiB)]
    assert _limited_child(0, isolation.NAMESPACES, resource.RLIMIT_AS) == [before]


@forking
def test_without_isolation_the_process_limit_counts_what_the_graders_uid_already_runs():
    """isolation.py apply_limits: in the unsafe mode the worker runs as the grader's own uid,
    whose processes RLIMIT_NPROC counts, so the limit is `processes` more than it runs
    (`== UNSAFE_NONE` -> `<` left `processes` in all: no fork for a grader running many);
    with namespaces the uid is the student's own, `processes` alone. Open files as given."""
    unsafe, files = _limited_child(0, isolation.UNSAFE_NONE, resource.RLIMIT_NPROC,
                                   resource.RLIMIT_NOFILE)
    isolated, _ = _limited_child(0, isolation.NAMESPACES, resource.RLIMIT_NPROC,
                                 resource.RLIMIT_NOFILE)
    assert isolated == _within_hard(resource.RLIMIT_NPROC, 64)
    assert files == _within_hard(resource.RLIMIT_NOFILE, 128)
    assert unsafe[0] == unsafe[1] > isolated[0]  # this test's process at least is the uid's


def test_runtime_trees_under_the_roots_tmp_are_bound_back_whole(monkeypatch):
    """isolation.py _private_tmp: each held tree is bound, with its submounts, from HOLD into
    the private /tmp (`MS_BIND | MS_REC` -> `/` passed 0.25: no bind at all). Only a root
    whose runtime lives under /tmp (a checkout cloned there) has held trees, so the kernel's
    calls are recorded here rather than made."""
    calls = []
    monkeypatch.setattr(isolation.kernel, "mount", lambda *args: calls.append(("mount", *args)))
    monkeypatch.setattr(isolation.kernel, "umount", lambda *args: calls.append(("umount", *args)))
    monkeypatch.setattr(isolation.os.path, "isdir", lambda path: True)
    monkeypatch.setattr(isolation.os, "mkdir", lambda *args: calls.append(("mkdir", *args)))
    isolation._private_tmp(64, ["venv"])
    tree = isolation.kernel.MS_BIND | isolation.kernel.MS_REC
    assert calls == [
        ("mount", "/tmp", isolation.HOLD, None, tree),
        ("mount", "tmpfs", "/tmp", "tmpfs", isolation.kernel.MS_NOSUID | isolation.kernel.MS_NODEV,
         "size=64m,mode=1777"),
        ("mkdir", "/tmp/venv", 0o755),
        ("mount", f"{isolation.HOLD}/venv", "/tmp/venv", None, tree),
        ("umount", isolation.HOLD)]


def test_the_workers_tmp_proc_and_dev_shm_are_mounted_with_their_flags(monkeypatch):
    """isolation.py isolate_worker: /proc nosuid, nodev, noexec (`MS_NOSUID % MS_NODEV`
    dropped nodev), /tmp nosuid and nodev, /dev/shm all three; the kernel's calls are
    recorded rather than made, so this runs anywhere."""
    kernel = isolation.kernel
    calls = []
    monkeypatch.setattr(kernel, "unshare", lambda flags: calls.append(("unshare", flags)))
    monkeypatch.setattr(kernel, "mount", lambda *args: calls.append(("mount", *args)))
    monkeypatch.setattr(isolation.os, "mkdir", lambda *args: calls.append(("mkdir", *args)))
    monkeypatch.setattr(isolation.os, "chown", lambda *args: calls.append(("chown", *args)))
    isolation.isolate_worker(32, [], 1234)
    plain = kernel.MS_NOSUID | kernel.MS_NODEV
    assert calls == [
        ("unshare", kernel.CLONE_NEWNS | kernel.CLONE_NEWIPC | kernel.CLONE_NEWNET
         | kernel.CLONE_NEWCGROUP),
        ("mount", "tmpfs", "/tmp", "tmpfs", plain, "size=32m,mode=1777"),
        ("mount", "proc", "/proc", "proc", plain | kernel.MS_NOEXEC),
        ("mount", "tmpfs", "/dev/shm", "tmpfs", plain | kernel.MS_NOEXEC,
         f"size={isolation.SHM_MB}m,mode=1777"),
        ("mkdir", isolation.WORKDIR, 0o700),
        ("chown", isolation.WORKDIR, 1234, 1234)]


@pytest.mark.parametrize("code, why", [
    (errno.EPERM, "unprivileged user namespaces are disabled, or a security policy forbids "
                  "them"),
    (errno.ENOSPC, "the limit on user namespaces (user.max_user_namespaces) is 0 or reached"),
    (errno.EINVAL, "the kernel lacks one of them"),
    (errno.ENOMEM, os.strerror(errno.ENOMEM)),
])
def test_a_refused_zygote_says_why_the_kernel_refused_its_namespaces(monkeypatch, code, why):
    """isolation.py enter_zygote: each errno of unshare() is said in words (22 -> 23 left
    EINVAL as "Invalid argument"); any other is the kernel's own text. Recorded, not made."""
    def refuse(flags):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(isolation.kernel, "LINUX", True)
    monkeypatch.setattr(isolation.kernel, "unshare", refuse)
    with pytest.raises(isolation.Unavailable) as refused:
        isolation.enter_zygote(lambda: pytest.fail("no maps are written for a refused zygote"))
    assert str(refused.value) == ("the kernel refused new user, mount, PID, IPC and network "
                                  f"namespaces: {why}")

"""The zygote `sdpa-course check` keeps warm for the next check (`autograder.sandbox.warm`).

A later pool with the same configuration forks its workers from it, each worker still a fresh
fork (nothing one check's code did reaches the next), only its user reaches it, and it ends
when idle or asked to. That the workers it forks are isolated exactly as a fresh zygote's is
checked for the three graders in `test_sandbox_isolation` (`warm_results`).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder.sandbox import Cell, Limits, Sandbox, SandboxPool, warm

REPO = Path(__file__).resolve().parent.parent
ANSWER_KEY = REPO / "solutions" / "sdpa" / "attention.ipynb"
SYSTEM_PYTHON = Path(f"/usr/bin/python3.{sys.version_info.minor}")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
linux_root = pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0,
                                reason="another user is made from root on Linux")


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """A cache folder of the test's own, so that its warm zygotes are the test's; any left
    running at the end is stopped."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield folder
    for path in (folder / "sdpa-course" / "warm").glob("zygote-*"):
        warm.stop(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (ProcessLookupError, FileNotFoundError):  # reaped between the two looks too
        return False
    return state != "Z"


def _wait_gone(pid: int, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize(("text", "seconds"), [
    (None, 600.0), ("", 600.0), ("30", 30.0), ("2.5", 2.5), ("0", 0.0), ("off", 0.0),
    ("-5", 0.0), ("nan", 0.0), ("1e12", 86_400.0), ("inf", 86_400.0)])
def test_the_idle_time_is_read_from_the_environment(monkeypatch, text, seconds):
    if text is None:
        monkeypatch.delenv(warm.WARM_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(warm.WARM_VARIABLE, text)
    assert warm.idle_seconds() == seconds


def test_a_package_installed_or_another_configuration_names_another_zygote(monkeypatch,
                                                                          tmp_path):
    site, work = tmp_path / "site-packages", tmp_path / "work"
    site.mkdir()
    work.mkdir()
    monkeypatch.setattr(sys, "path", [str(work), *sys.path, str(site)])
    config, environment = {"isolation": "namespaces", "hidden": []}, {"PATH": "/usr/bin"}
    key = warm.zygote_key(config, environment, b"code")
    assert warm.zygote_key(config, environment, b"code") == key
    (work / "attention.ipynb").write_text("{}")  # a saved notebook: the same zygote
    os.utime(work, ns=(1, 1))
    assert warm.zygote_key(config, environment, b"code") == key
    (site / "scipy").mkdir()  # a package installed
    os.utime(site, ns=(2, 2))
    changed = warm.zygote_key(config, environment, b"code")
    assert changed != key
    assert warm.zygote_key(config, environment, b"other code") != changed
    assert warm.zygote_key({**config, "hidden": ["/course"]}, environment, b"code") != changed
    assert warm.zygote_key(config, {"PATH": "/bin"}, b"code") != changed


def test_the_runtime_folder_is_used_only_where_it_is_this_users_own(cache, monkeypatch,
                                                                    tmp_path):
    runtime = tmp_path / "run-user"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert warm.socket_directory() == cache / "sdpa-course" / "warm"  # missing: not made
    assert not runtime.exists()
    runtime.mkdir(mode=0o755)
    assert warm.socket_directory() == cache / "sdpa-course" / "warm"  # others may enter
    runtime.chmod(0o700)
    assert warm.socket_directory() == runtime / "sdpa-course"


def test_no_socket_is_kept_in_a_folder_others_may_enter_or_that_is_a_link(cache, tmp_path):
    folder = cache / "sdpa-course" / "warm"
    assert warm.socket_directory() == folder and folder.stat().st_mode & 0o777 == 0o700
    folder.chmod(0o755)
    assert warm.socket_directory() is None
    shutil.rmtree(folder)
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    folder.symlink_to(tmp_path / "elsewhere")
    assert warm.socket_directory() is None
    with SandboxPool(keep_warm=60) as pool:  # grades, keeping nothing warm
        assert pool.warm_socket is None and not pool.warm


def test_where_no_zygote_can_be_kept_a_pool_grades_as_before(cache, monkeypatch):
    """No Unix sequenced-packet sockets, no home: nothing is kept, nothing fails."""
    def refused(*_args, **_kwargs):
        raise OSError("no such sockets here")

    monkeypatch.setattr(warm, "socket", SimpleNamespace(**{**vars(socket), "socket": refused}))
    with SandboxPool(keep_warm=60) as pool, Sandbox([Cell("x = 6 * 7\n", "cell 1")],
                                                     pool=pool) as sandbox:
        assert [o.status for o in sandbox.start()] == ["ok"] and sandbox.get("x") == 42
        assert not pool.warm and pool.warm_socket is None
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(warm.Path, "home", classmethod(lambda cls: (_ for _ in ()).throw(
        RuntimeError("no home"))))
    assert warm.socket_directory() is None


def test_a_second_pool_forks_fresh_workers_from_the_first_pools_zygote(cache):
    with SandboxPool(keep_warm=60) as first:
        with Sandbox([Cell("import numpy, os\nnumpy.pi = 3.0\nos.environ['LEFT'] = 'x'\n"
                           "open('/tmp/left', 'w').write('x')\n", "cell 1")],
                     pool=first) as sandbox:
            assert [o.status for o in sandbox.start()] == ["ok"]
        zygote, layers = first.zygote_pid, first.layers
    assert not first.warm and first.warm_socket.parent == cache / "sdpa-course" / "warm"
    assert _alive(zygote)  # kept after its pool closed
    with SandboxPool(keep_warm=60) as second:
        assert second.warm and second.zygote_pid == zygote and second.layers == layers
        with Sandbox([Cell("import numpy, os\npi = float(numpy.pi)\n"
                           "left = os.path.exists('/tmp/left') or 'LEFT' in os.environ\n",
                           "cell 1")], pool=second) as sandbox:
            assert [o.status for o in sandbox.start()] == ["ok"]
            assert sandbox.get("pi") == pytest.approx(3.141592653589793)
            assert sandbox.get("left") is False
    with SandboxPool(keep_warm=60, hidden_paths=[cache]) as other:  # another configuration
        assert not other.warm and other.zygote_pid != zygote
        assert other.warm_socket != first.warm_socket
    assert warm.stop(first.warm_socket) and warm.stop(other.warm_socket)
    assert _wait_gone(zygote)
    with SandboxPool(keep_warm=60) as third:  # the socket is gone: a new zygote
        assert not third.warm and third.zygote_pid != zygote


REUSED_WITHOUT_BYTECODE = textwrap.dedent("""
    from autograder.sandbox import SandboxPool, warm
    with SandboxPool(keep_warm=60) as first:
        pass
    with SandboxPool(keep_warm=60) as second:
        print(second.warm, second.warm_socket == first.warm_socket)
    warm.stop(second.warm_socket)
""")


def test_the_next_pool_finds_the_warm_zygote_when_its_code_is_compiled_anew(cache, tmp_path):
    """No bytecode cache to read (a fresh clone, PYTHONDONTWRITEBYTECODE): the sandbox's
    modules are compiled for each pool, and marshal writes the same code differently from one
    compilation to the next, so the zygote is named by its sources."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPYCACHEPREFIX": str(tmp_path / "no-bytecode")}
    done = subprocess.run([sys.executable, "-c", REUSED_WITHOUT_BYTECODE], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_a_warm_zygote_ends_once_idle_and_the_next_pool_starts_anew(cache):
    with SandboxPool(keep_warm=1) as pool:
        zygote = pool.zygote_pid
    assert _wait_gone(zygote)
    with SandboxPool(keep_warm=1) as again:  # its socket is left, stale: replaced
        assert not again.warm and again.zygote_pid != zygote
        assert again.warm_socket == pool.warm_socket


def test_a_pool_without_keep_warm_leaves_no_zygote(cache):
    with SandboxPool() as pool:
        zygote = pool.zygote_pid
        assert pool.warm_socket is None
    assert _wait_gone(zygote)  # the default 30 s: a bound, not a speed test
    assert not (cache / "sdpa-course" / "warm").exists()


LISTEN_AS_NOBODY = textwrap.dedent("""
    import json, socket, sys
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(sys.argv[1])
    listener.listen(1)
    print("listening", flush=True)
    connection, _ = listener.accept()
    connection.send(json.dumps({"ok": True, "mode": "namespaces"}).encode())
    connection.recv(16)
""")
CONNECT_AS_NOBODY = textwrap.dedent("""
    import socket, sys
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    connection.settimeout(60)
    connection.connect(sys.argv[1])
    print(len(connection.recv(1 << 16)))
""")


def _listening(folder: Path) -> tuple[Path, socket.socket]:
    """A listening socket as a warm zygote's, in a folder of the test's."""
    folder.mkdir(mode=0o700)
    path = folder / "zygote-test"
    listener = warm.listen(path)
    assert listener is not None
    return path, listener


def test_a_warm_zygote_serves_only_a_client_of_its_own_uid(tmp_path, monkeypatch):
    """The zygote's side of the ownership check, without another user: the zygote's accept
    run as if its uid were another's (a foreign uid, seen from the client's side) sends no
    hello and keeps no channel; as its own, it serves. Everywhere, not only as root (the
    other-user test below needs root, setpriv and Debian's Python)."""
    from autograder.sandbox import zygote

    path, listener = _listening(tmp_path / "warm")
    try:
        for uid, served in ((os.getuid() + 1, False), (os.getuid(), True)):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            client.settimeout(30)
            client.connect(str(path))
            fake = SimpleNamespace(listener=listener, hello=b'{"ok": true}', controls={},
                                   poller=select.poll())
            with monkeypatch.context() as patched:
                patched.setattr(zygote.os, "getuid", lambda uid=uid: uid)
                zygote.Zygote.accept(fake)
            assert bool(fake.controls) is served, uid
            assert client.recv(1 << 16) == (b'{"ok": true}' if served else b""), uid
            client.close()
            for channel in fake.controls.values():
                channel.close()
    finally:
        listener.close()


def test_a_client_uses_no_warm_zygote_whose_uid_is_not_its_own(tmp_path, monkeypatch):
    """The client's side: a listener that says hello like a warm zygote is used by its own
    user and refused when its peer's uid is not the client's (run as if the client's uid were
    another's), without another user."""
    path, listener = _listening(tmp_path / "warm")

    def serve_hellos():
        for _ in range(2):
            try:
                channel, _ = listener.accept()
            except OSError:
                return
            with channel:
                try:
                    channel.send(b'{"ok": true}')
                    channel.recv(16)  # until the client closes
                except OSError:
                    pass

    server = threading.Thread(target=serve_hellos, daemon=True)
    server.start()
    try:
        with monkeypatch.context() as patched:
            patched.setattr(warm.os, "geteuid", lambda: os.getuid() + 1)
            refused = warm.connect(path)
        assert refused is None
        reached = warm.connect(path)
        assert reached is not None and reached[1] == {"ok": True}
        reached[0].close()
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes an accept() still waiting; close() does not
        listener.close()
        server.join(timeout=30)
        assert not server.is_alive()


@linux_root
@pytest.mark.skipif(not SYSTEM_PYTHON.exists() or not shutil.which("setpriv"),
                    reason=f"needs {SYSTEM_PYTHON} and setpriv")
def test_only_its_own_user_reaches_a_warm_zygote_and_only_its_own_is_used(cache, tmp_path):
    with SandboxPool(keep_warm=60) as pool:
        path = pool.warm_socket
    opened = [(folder, folder.stat().st_mode & 0o7777) for folder in path.parents
              if folder != Path("/")]
    try:
        for folder, mode in opened:
            folder.chmod(mode | 0o011)  # others may pass through (the socket's folder too)
        path.chmod(0o777)
        # Another user, let through by the folders' and the socket's permissions: no hello.
        done = subprocess.run([*NOBODY, str(SYSTEM_PYTHON), "-c", CONNECT_AS_NOBODY, path.name],
                              capture_output=True, text=True, timeout=60, cwd=path.parent)
        assert done.returncode == 0 and done.stdout.split() == ["0"], done.stderr
        assert warm.connect(path) is not None  # its own user is served
        # A listener of another user's, where a warm zygote would be, is never used.
        open_folder = tmp_path / "open"
        open_folder.mkdir()
        open_folder.chmod(0o777)
        listening = subprocess.Popen([*NOBODY, str(SYSTEM_PYTHON), "-c", LISTEN_AS_NOBODY,
                                      "zygote-impostor"], stdout=subprocess.PIPE, text=True,
                                     cwd=open_folder)
        try:
            assert listening.stdout.readline().strip() == "listening"
            assert warm.connect(open_folder / "zygote-impostor") is None
        finally:
            listening.kill()
            listening.wait()
    finally:
        for folder, mode in opened:
            folder.chmod(mode)


def test_check_leaves_its_zygote_warm_for_the_next_check(cache, monkeypatch, tmp_path):
    monkeypatch.setenv(warm.WARM_VARIABLE, "60")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    reports = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "sdpa_course.cli", "check",
                               str(ANSWER_KEY), "--json"], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stderr
        reports.append(json.loads(done.stdout))
        sockets = list((cache / "sdpa-course" / "warm").glob("zygote-*"))
        assert len(sockets) == 1
        reached = warm.connect(sockets[0])
        assert reached is not None
        reached[0].close()
        reports[-1]["zygote"] = reached[2]
    first, second = reports
    assert first["score"] == second["score"] == 20 and first["zygote"] == second["zygote"]
    assert first["exercises"] == second["exercises"] and second["warnings"] == first["warnings"]
    assert first["isolation"] == second["isolation"]
    assert warm.stop(sockets[0]) and _wait_gone(first["zygote"])


def test_the_listening_socket_is_never_a_workers(cache):
    """Each worker closes every descriptor but its own channel: no socket of the zygote's,
    least of all the one other checks connect to."""
    with SandboxPool(keep_warm=60) as pool, Sandbox([Cell(
            "import os, stat\nkinds = {}\nfor fd in os.listdir('/proc/self/fd'):\n"
            "    try:\n        kinds[int(fd)] = stat.S_ISSOCK(os.fstat(int(fd)).st_mode)\n"
            "    except OSError:\n        pass\nsockets = sum(kinds.values())\n", "cell 1")],
            pool=pool) as sandbox:
        assert [o.status for o in sandbox.start()] == ["ok"]
        assert sandbox.get("sockets") == 1  # its channel to the trusted side




def _in_cgroup(pid: int, cgroup) -> bool:
    """Whether a host pid is in each directory of `cgroup` (v1 or v2), as the host sees it."""
    paths = [line.split(":", 2)[2] for line in Path(f"/proc/{pid}/cgroup").read_text().split()]
    return all(any(d.endswith(p) for p in paths if p != "/") for d in cgroup.dirs)


def _ends(read_end: int, seconds: float = 30.0) -> bool:
    """Whether the write end of a worker's output pipe, which only the worker (and what it
    started) holds, closes within `seconds`: the worker is gone."""
    os.set_blocking(read_end, False)
    poller = select.poll()
    poller.register(read_end, select.POLLIN | select.POLLHUP)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if poller.poll(1000):
                try:
                    if os.read(read_end, 1 << 16) == b"":
                        return True
                except BlockingIOError:
                    pass
        return False
    finally:
        os.close(read_end)


def test_a_worker_forked_ahead_is_the_first_sandboxs_with_its_own_uid_and_cgroup(cache):
    """`check` has the warm zygote fork its worker while it imports the engine
    (`SandboxPool.prefork`): the first sandbox with those limits takes it, uid and cgroup
    included, and it is as fresh as any; the next sandbox forks its own."""
    with SandboxPool(keep_warm=60) as first:
        first.start()
    with SandboxPool(keep_warm=60) as pool:
        assert pool.warm and pool.prefork(Limits())
        assert not pool.prefork(Limits())  # one ahead at most
        _, uid, cgroup, _ = pool._preforked
        with Sandbox([Cell("import os, numpy\nnumpy.pi = 3.0\nuid = os.getuid()\n",
                           "cell 1")], pool=pool) as sandbox:
            assert [o.status for o in sandbox.start()] == ["ok"]
            assert pool._preforked is None and sandbox.uid == uid
            if cgroup is not None:
                assert sandbox._cgroup is cgroup
                assert _in_cgroup(sandbox.pid, cgroup)
            if pool.layers["spare_uids"]:
                assert sandbox.get("uid") == uid
        with Sandbox([Cell("import numpy\npi = float(numpy.pi)\n", "cell 1")],
                     pool=pool) as later:
            assert [o.status for o in later.start()] == ["ok"]
            assert later.get("pi") == pytest.approx(3.141592653589793)
            assert later.uid != uid
    if cgroup is not None:
        assert not any(os.path.exists(d) for d in cgroup.dirs)
    warm.stop(pool.warm_socket)


def test_a_worker_forked_ahead_for_other_limits_or_never_taken_ends_with_its_cgroup(cache):
    with SandboxPool(keep_warm=60) as first:
        first.start()
    with SandboxPool(keep_warm=60) as pool:
        assert pool.prefork(Limits(cell_seconds=3.0))
        _, _, cgroup, channels = pool._preforked
        output = os.dup(channels[1])
        with Sandbox([Cell("x = 1\n", "cell 1")], pool=pool) as sandbox:  # the default limits
            assert [o.status for o in sandbox.start()] == ["ok"]
        assert pool._preforked is None and _ends(output)
        if cgroup is not None:
            assert not any(os.path.exists(d) for d in cgroup.dirs)
        assert pool.prefork(Limits())
        _, _, cgroup, channels = pool._preforked
        output = os.dup(channels[1])
    assert _ends(output)  # the pool closed with it untaken
    if cgroup is not None:
        assert not any(os.path.exists(d) for d in cgroup.dirs)
    warm.stop(pool.warm_socket)


def test_nothing_is_forked_ahead_before_a_zygote_runs(cache):
    """A cold pool's zygote is still starting: forking ahead would wait for it, which is
    what `check` imports the engine during."""
    pool = SandboxPool(keep_warm=60)
    try:
        assert not pool.prefork(Limits())
        pool.start(wait=False)
        assert not pool.prefork(Limits())
    finally:
        pool.close()
    assert not pool.prefork(Limits())
    if pool.warm_socket is not None:
        warm.stop(pool.warm_socket)

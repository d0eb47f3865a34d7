"""The same isolation wherever the grader runs: as root, as an ordinary user, without
CAP_SYS_ADMIN. Each grader runs every scenario of `sandbox_scenarios` once (a subprocess, its
own pool), then again in a pool left warm, the three graders at once; each test checks one
guarantee on all three, and fails if one layer is taken out.
"""

from __future__ import annotations

import errno
import importlib.metadata
import json
import os
import secrets
import shutil
import sys
import threading
from concurrent.futures import Future
from pathlib import Path

import pytest
import sandbox_graders as graders

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0,
                                 reason="the three graders are made from root on Linux")]
REPO = graders.REPO
SCENARIOS = Path(__file__).resolve().parent / "sandbox_scenarios.py"
ZERO = ["0000000000000000"]
LIMITS = {"memory_mb": 512, "disk_mb": 64, "processes": 32, "cpu_seconds": 30,  # the scenarios'
          "open_files": 256}
MiB = 2**20


@pytest.fixture(scope="module")
def workdir():
    folder = graders.make_workdir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def course(workdir):
    """A course directory, readable on the host, as the grader passes it to the pool."""
    course = workdir / "course"
    for path, text in {"gradebook.db": "SQLite format 3 grades",
                       "source/sdpa/attention.ipynb": "the source notebook",
                       "submitted/alice/sdpa/attention.ipynb": "alice's answers"}.items():
        (course / path).parent.mkdir(parents=True, exist_ok=True)
        (course / path).write_text(text)
    for path in [course, *course.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return course


@pytest.fixture(scope="module")
def made_graders(workdir):
    """{name: Grader} of every grader this machine can make, and why the ordinary user's
    cannot be made ("" when it can); the user is removed when the module is done."""
    made = {name: graders.root_grader(name, workdir) for name in graders.GRADERS
            if name != "user"}
    why = graders.why_no_user()
    if not why:
        (workdir / "user").mkdir()
        (workdir / "user").chmod(0o755)
        made["user"] = graders.make_user(workdir / "user")
    yield made, why
    if "user" in made:
        graders.remove_user(made["user"])


@pytest.fixture(scope="module", params=graders.GRADERS)
def grader(request, made_graders):
    made, why = made_graders
    if request.param not in made:
        pytest.skip(f"no ordinary-user grader: {why}")
    return made[request.param]


def _kit_data_copy() -> list[str]:
    dist = importlib.metadata.distribution("sdpa-course")
    return [str(Path(str(dist.locate_file(f))).resolve()) for f in dist.files or ()
            if "solutions" in str(f) or "dist-info" in str(f)]


def _scenario_names(grader) -> list[str]:
    names = ["identity", "secrets", "corpus_reader", "writes", "network", "neighbours",
             "processes", "forked_cell", "confinement", "limits", "measured_memory"]
    if grader.name != "user":
        names.append("memory_total")  # without cgroups nothing bounds it: see the warning
    return names


# What a zygote kept warm by one `sdpa-course check` for the next is checked for.
WARM_SCENARIOS = ["identity", "secrets", "writes", "network", "neighbours", "processes",
                  "confinement", "limits"]


@pytest.fixture(scope="module")
def runs(made_graders, course):
    """{grader's name: {"cold": its run of every scenario, "warm": its run of WARM_SCENARIOS}}
    as futures. The graders run at once, each in a thread of its own: a process of its own
    with a pool of its own, as two instructors' graders on one machine would be, and most of
    a run is waiting (a sleep, a time-out, a zygote's start). One grader's two runs follow
    each other (they share its home's secret file)."""
    made, _ = made_graders
    futures = {name: {"cold": Future(), "warm": Future()} for name in made}

    def run_both(grader) -> None:
        for kind, names, warm in (("cold", _scenario_names(grader), False),
                                  ("warm", WARM_SCENARIOS, True)):
            future = futures[grader.name][kind]
            try:
                future.set_result(_run_scenarios(grader, course, names, warm=warm))
            except Exception as err:  # noqa: BLE001 - raised to the tests that read this run
                future.set_exception(err)

    threads = [threading.Thread(target=run_both, args=(grader,), name=f"grader-{name}")
               for name, grader in made.items()]
    for thread in threads:
        thread.start()
    yield futures
    for thread in threads:
        thread.join()


@pytest.fixture(scope="module")
def results(grader, runs):
    """Every scenario, run once by this grader (its failure, if the run failed)."""
    return runs[grader.name]["cold"].result()


@pytest.fixture(scope="module")
def warm_results(grader, runs):
    """The scenarios of `WARM_SCENARIOS`, run by this grader in a pool whose zygote another
    pool started and left warm."""
    return runs[grader.name]["warm"].result()


def _run_scenarios(grader, course, names: list[str], warm: bool = False) -> dict:
    marker = secrets.token_hex(4)
    home_secret = grader.home / "notes-on-students.txt"
    home_secret.write_text("private notes")
    home_secret.chmod(0o644)
    tmp_secret = Path(f"/tmp/sdpa-test-secret-{marker}")
    tmp_secret.write_text("the grader's scratch file")
    tmp_secret.chmod(0o644)
    targets = [str(p) for p in (
        course, course / "gradebook.db", course / "source/sdpa/attention.ipynb",
        course / "submitted/alice/sdpa/attention.ipynb", grader.home, home_secret, tmp_secret,
        REPO / "solutions/sdpa/attention.ipynb", REPO / "source/sdpa/attention.ipynb",
        REPO / "autograder/suites/test_ex1.py", REPO / "sdpa_ref/__init__.py", REPO)]
    context = {"hidden": [str(course)], "secrets": targets + _kit_data_copy(),
               "marker": marker, "number": secrets.randbelow(10**6), "home": str(grader.home)}
    request = {"scenarios": names, "context": context, "warm": warm}
    try:
        done = grader.run(SCENARIOS, json.dumps(request))
    finally:
        home_secret.unlink()
        tmp_secret.unlink()
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    errors = {k: v["scenario_error"] for k, v in found.items()
              if isinstance(v, dict) and "scenario_error" in v}
    assert not errors, errors
    found["context"] = context
    return found


def test_isolation_is_namespaces_with_landlock_seccomp_and_no_warning_but_cgroups(results,
                                                                                  grader):
    identity = results["identity"]
    assert identity["mode"] == "namespaces" == identity["isolation"]
    assert identity["layers"]["seccomp"] is True and identity["layers"]["landlock"] >= 6
    if grader.name == "user":
        assert identity["layers"]["cgroups"] == ""
        assert any("no per-submission cgroup" in w for w in identity["warnings"])
    else:
        assert identity["layers"]["cgroups"].startswith("cgroup v")
        assert identity["warnings"] == []


def test_each_submission_has_a_cgroup_with_its_limits_removed_afterwards(results, grader):
    identity = results["identity"]
    if grader.name == "user":
        pytest.skip("an ordinary user may not create cgroups here")
    settings = {}
    for directory, files in identity["cgroup"].items():
        assert "/sdpa-sandbox-" in directory
        settings.update(files)
    memory = (LIMITS["memory_mb"] + LIMITS["disk_mb"] + 16 + 64) * MiB
    assert settings.get("memory.limit_in_bytes", settings.get("memory.max")) == str(memory)
    assert settings["pids.max"] == str(LIMITS["processes"])
    assert settings.get("cpu.shares", settings.get("cpu.weight")) in ("1024", "100")
    assert identity["cgroup_left"] == []


def test_the_graders_are_what_they_claim(results, grader):
    identity = results["identity"]
    sys_admin = 1 << 21
    effective = int(identity["grader_status"]["CapEff"][0], 16)
    assert (identity["grader_euid"] == 0) == (grader.name != "user")
    assert bool(effective & sys_admin) == (grader.name == "root")


def test_student_has_no_capabilities_no_new_privs_seccomp_and_its_own_uid(results, grader):
    identity = results["identity"]
    status, uid = identity["status"], identity["sandbox_uid"]
    assert identity["uid"] == uid >= 1_000_000 and identity["pid"] == 1
    assert status["Uid"] == [str(uid)] * 4 and status["Gid"] == [str(uid)] * 4
    for caps in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert status[caps] == ZERO, caps
    assert status["NoNewPrivs"] == ["1"] and status["Seccomp"] == ["2"]
    host_uid = identity["host_status"]["Uid"]
    if grader.name == "user":  # one uid only can be mapped: the grader's, holding nothing
        assert host_uid == [str(grader.uid)] * 4
        assert status["Groups"] == ["65534"]  # its group, not droppable, shows unmapped
    else:
        assert host_uid == [str(uid)] * 4  # a spare uid of its own, never root
        assert status["Groups"] == []


def test_student_lives_in_namespaces_of_its_own(results):
    identity = results["identity"]
    inside, grader_ns = identity["namespaces"], identity["grader_namespaces"]
    assert inside == identity["host_namespaces"]
    for kind in ("net", "pid", "ipc", "mnt", "user"):
        assert inside[kind] != grader_ns[kind], kind
    # its cgroup namespace: it sees its cgroups as roots, not the grader's cgroup paths
    assert all(line.endswith(":/") for line in identity["own_cgroup"].splitlines())


# Mounts a student may write to (its private tmpfs, its /proc, the few devices); any other,
# the runtime above all, is read-only whatever Landlock and file permissions also refuse.
WRITABLE_MOUNTS = {"/tmp", "/dev/shm", "/proc", *(f"/dev/{name}" for name in
                                                 ("null", "zero", "full", "random", "urandom"))}


def test_every_mount_but_the_private_temporaries_proc_and_devices_is_read_only(results):
    mounts = results["identity"]["mounts"]
    assert len(mounts) > 5 and {point for point, _ in mounts} >= WRITABLE_MOUNTS
    writable = [point for point, options in mounts if "ro" not in options.split(",")]
    assert set(writable) <= WRITABLE_MOUNTS, writable


def test_no_file_of_the_course_the_kit_the_grader_or_other_students_is_readable(results):
    found, context = results["secrets"], results["context"]
    leaked = {}
    for path, what in found.items():
        if what in ("absent", "refused"):
            continue
        listing = what.removeprefix("listed: ").split(",") if what.startswith("listed") else []
        # A folder on the way to the runtime (the checkout holding .venv) shows that alone.
        if what.startswith("listed") and set(listing) <= {"", ".venv"}:
            continue
        leaked[path] = what
    assert leaked == {}
    assert len(found) == len(context["secrets"]) > 12


def test_the_corpus_reader_looks_everywhere_and_finds_nothing(results):
    reader = results["corpus_reader"]
    assert reader["outcomes"] == ["ok"] and reader["defined"] is False
    assert reader["tried"] > 20


def test_nothing_written_outlives_the_submission(results):
    writes = results["writes"]
    inside = writes["inside"]
    for writable in ("/tmp", "/dev/shm", "."):
        assert inside[writable] == "wrote", writable
    for place, what in inside.items():
        if place not in ("/tmp", "/dev/shm", "."):
            assert what in (errno.EROFS, errno.EACCES, errno.ENOENT, errno.EPERM), (place, what)
    assert writes["on_host"] == {place: False for place in writes["on_host"]}
    assert writes["seen_by_next"] == []


def test_no_network_not_even_loopback_or_another_local_address(results):
    network = results["network"]
    assert len(network["targets"]) >= 4  # two TCP listeners, two UNIX sockets
    assert "connected" not in network["attempts"], dict(zip(network["targets"],
                                                           network["attempts"], strict=True))
    assert not any(network["accepted"])


def test_two_submissions_graded_at_once_cannot_reach_each_other(results):
    neighbours = results["neighbours"]
    assert neighbours["reached"] != "connected" and neighbours["accepted"] is False
    assert neighbours["note_seen"] is False
    first, second = neighbours["namespaces"]
    assert all(first[kind] != second[kind] for kind in ("net", "pid", "ipc"))


def test_background_processes_die_with_the_submission(results):
    processes = results["processes"]
    assert processes["while_open"] >= 2  # the child and the setsid daemon, seen from the host
    assert processes["after_close"] == 0


def test_a_cell_that_forks_leaves_only_the_worker_answering(results):
    forked = results["forked_cell"]
    assert forked["outcomes"] == ["ok", "ok", "ok"], forked
    assert forked["x"] == 42 and forked["me"] == forked["parent"] and forked["after"] == 3


def test_each_layer_refuses_on_its_own(results):
    """seccomp (new namespaces, ptrace, non-UNIX sockets) and Landlock (writes under /proc),
    each probed where the other layers would let the call through."""
    probes = results["confinement"]
    assert probes["unshare user"] == errno.EPERM
    assert probes["ptrace traceme"] == errno.EPERM
    assert probes["inet socket"] == errno.EPERM
    assert probes["mount tmpfs"] == errno.EPERM
    assert probes["write /proc/self/comm"] == errno.EACCES


def test_rlimits_tmp_size_disk_memory_processes_and_descriptors_are_bounded(results):
    found = results["limits"]
    assert found["outcomes"] == ["ok"] * 6
    rlimits = found["rlimits"]
    assert rlimits["RLIMIT_CPU"] == LIMITS["cpu_seconds"]
    assert rlimits["RLIMIT_NOFILE"] == LIMITS["open_files"]
    assert found["opened"] < LIMITS["open_files"] and found["open_error"] == errno.EMFILE
    assert 0 < rlimits["RLIMIT_AS"] < 4 * 2**30
    assert rlimits["RLIMIT_FSIZE"] == LIMITS["disk_mb"] * MiB
    assert rlimits["RLIMIT_NPROC"] == LIMITS["processes"] and rlimits["RLIMIT_CORE"] == 0
    assert found["tmp_mb"] <= LIMITS["disk_mb"]
    assert found["files_written"] <= LIMITS["disk_mb"] and found["files_error"] == errno.ENOSPC
    assert found["big_error"] == errno.EFBIG and found["big_size"] <= LIMITS["disk_mb"] * MiB
    assert found["hog"] == "MemoryError"
    assert 256 <= found["touched"] <= LIMITS["memory_mb"]
    assert found["forked"] < LIMITS["processes"] and found["fork_error"] == errno.EAGAIN


def test_memory_of_all_processes_together_is_bounded_by_the_cgroup(results, grader):
    if grader.name == "user":
        pytest.skip("an ordinary user has no cgroup here: bounded per process (see the warning)")
    total = results["memory_total"]
    assert total["cgroups"].startswith("cgroup v")
    limit_mb = LIMITS["memory_mb"] + LIMITS["disk_mb"] + 16 + 64
    assert total["status"] == "ok", total
    assert 400 * total["held_to_the_end"] <= limit_mb, total
    assert total["killed"] >= 8 - limit_mb // 400, total


def test_a_matrix_hidden_from_tracemalloc_is_read_from_outside_the_worker(results):
    """Exercise 4's memory test (autograder.sandbox.gauge): each way of hiding a 32 MiB
    matrix from tracemalloc is seen, or refused (a fork), by every grader."""
    found = results["measured_memory"]
    traced, resident, unmeasured, touched = found.pop("honest")
    assert traced < MiB and resident < 8 * MiB and unmeasured == "", found
    assert touched < 8 * MiB, found  # the module's 32 MiB buffer, resident, is not touched
    fork = found.pop("fork")
    assert isinstance(fork, str) and "BlockingIOError" in fork, fork
    traced, resident, unmeasured, touched = found.pop("preallocated")
    # made before the call: no mark rises, tracemalloc sees nothing; the pages it wrote count
    assert traced < MiB and resident < 8 * MiB and touched >= 30 * MiB and unmeasured == ""
    for how, (traced, resident, unmeasured, _touched) in found.items():
        assert resident >= 30 * MiB and unmeasured == "", (how, traced, resident)
    assert found["reset_peak"][0] < MiB and found["mmap"][0] < MiB  # tracemalloc was fooled


def test_a_zygote_kept_warm_between_checks_keeps_every_guarantee(warm_results, grader):
    """`sdpa-course check` leaves its zygote warm for the next check (`sandbox.warm`): the
    workers forked from it by a later process are bounded exactly as a fresh zygote's."""
    assert warm_results["warm"] == {"primed": False, "reused": True}
    test_isolation_is_namespaces_with_landlock_seccomp_and_no_warning_but_cgroups(
        warm_results, grader)
    test_student_has_no_capabilities_no_new_privs_seccomp_and_its_own_uid(warm_results, grader)
    test_student_lives_in_namespaces_of_its_own(warm_results)
    test_every_mount_but_the_private_temporaries_proc_and_devices_is_read_only(warm_results)
    test_no_file_of_the_course_the_kit_the_grader_or_other_students_is_readable(warm_results)
    test_nothing_written_outlives_the_submission(warm_results)
    test_no_network_not_even_loopback_or_another_local_address(warm_results)
    test_two_submissions_graded_at_once_cannot_reach_each_other(warm_results)
    test_background_processes_die_with_the_submission(warm_results)
    test_each_layer_refuses_on_its_own(warm_results)
    test_rlimits_tmp_size_disk_memory_processes_and_descriptors_are_bounded(warm_results)

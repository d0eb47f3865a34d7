"""Mutation testing of the modules that decide a grade or a boundary, with cosmic-ray.

    .venv/bin/python tools/mutation_test.py --list            # the targets and their tests
    .venv/bin/python tools/mutation_test.py sdpa_ref records  # some targets or groups
    .venv/bin/python tools/mutation_test.py --all --jobs 2    # every target, two at a time
    .venv/bin/python tools/mutation_test.py --all --sample 30 --budget 5400  # a sample, timed

Each target is a set of modules and the fast tests that should notice any change to them.
cosmic-ray changes one thing in one module at a time (an operator, a comparison, a number, a
`break`, ...), runs the target's tests, and the change (the mutant) is *killed* when they fail
and *survives* when they pass: a survivor is behaviour no test holds.

Each target runs in its own copy of the working tree (the files git tracks or would track) in
a temporary folder, so a stopped run never leaves a mutant in the checkout; PYTHONPATH points
the processes the tests start (the CLI, the sandbox, workers) at the copy too. cosmic-ray is
installed into this interpreter's environment on first use (`pip install cosmic-ray`; it is
not in the test extra, so `make test` does not install it). Mutants inside type annotations
of a module with `from __future__ import annotations` are skipped: never evaluated, they
cannot change what runs. `# pragma: no mutate` on a line skips its mutants too. Results: a
summary per target on stdout, and each survivor's diff in OUT/<target>.txt (default OUT:
mutation-results/).

Not run by the test suite: a full run takes hours on 2 cores (each mutant reruns its tests).
`--sample N` runs N of each target's mutants drawn at random (`--seed` makes the draw
repeatable; the others are counted as `not sampled`), and `--budget SECONDS` stops each
run after that long (all targets together) and reports what finished (the rest counted
as `pending`). Every mutant whose tests ran is listed in OUT/<target>.json with its outcome;
`--exclude-from OUT/a.json OUT/b.json ...` leaves those out of a later run (counted as
`ran before`), so that runs add up without counting a mutant twice.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
COSMIC_RAY = "cosmic-ray>=8.4,<9"
PYTEST = "-m pytest -x -q -p no:cacheprovider"


@dataclass(frozen=True)
class Target:
    name: str
    modules: tuple[str, ...]  # files or packages, relative to the checkout
    tests: str  # pytest arguments: files and -k/-m selections
    note: str = ""


TARGETS = {t.name: t for t in (
    Target("ref-softmax", ("sdpa_ref/softmax.py",),
           "tests/test_ref_softmax.py tests/test_ref_attention.py"),
    Target("ref-attention", ("sdpa_ref/attention.py", "sdpa_ref/masks.py",
                             "sdpa_ref/__init__.py"),
           "tests/test_ref_attention.py tests/test_ref_masks.py"),
    Target("ref-flash", ("sdpa_ref/flash.py",), "tests/test_ref_flash.py"),
    Target("ref-torch-masks", ("sdpa_ref/torch_masks.py",), "tests/test_ref_masks.py",
           "also checked against PyTorch itself in tests/test_ref_torch.py when installed"),
    Target("compare", ("autograder/compare.py",),
           "tests/test_compare.py tests/test_tolerances.py tests/test_hostile_values.py "
           "tests/test_engine_parts.py tests/test_corpus.py"),
    Target("compare-quick", ("autograder/compare.py",),
           "tests/test_compare.py tests/test_tolerances.py tests/test_hostile_values.py "
           "tests/test_fair_messages.py::"
           "test_two_significant_figures_are_told_to_give_three_and_not_called_imprecise",
           "compare's mutants against its quick tests alone (no corpus, no engine): a sample "
           "that fits in an hour on a loaded machine; `compare` runs the whole set"),
    Target("diagnoses", ("autograder/diagnoses",),
           "tests/test_mutants_diagnoses.py tests/test_hostile_values.py "
           "tests/test_engine_parts.py tests/test_corpus.py tests/test_names.py"),
    Target("diagnoses-quick", ("autograder/diagnoses",),
           "tests/test_mutants_diagnoses.py tests/test_names.py tests/test_not_answered.py "
           "tests/test_fair_isolation.py "
           "tests/test_fair_messages.py tests/test_hostile_values.py tests/test_scoring_gaps.py "
           "tests/test_corpus.py::test_case_gets_its_expected_score_and_diagnoses "
           "tests/test_corpus.py::test_every_failure_of_a_mistake_is_explained_by_its_diagnosis "
           # the corpus with the lesson's numbers only (20-30 s): not the students' variants
           "-k 'not memory_point and not [max- and not [ada- and not [ned- and not [ora-'",
           "the diagnoses' mutants against the tests that grade slips in this process (the "
           "hidden suites and diagnoses called on the corpus's pieces) and the corpus's "
           "expected diagnoses with the lesson's numbers: about 2 minutes unmutated under "
           "load, where `diagnoses` takes 10-20"),
    Target("limits", ("autograder/sandbox/limits.py",),
           "tests/test_docs.py tests/test_sandbox.py -k 'limit or memory or timeout or output'"),
    Target("isolation", ("autograder/sandbox/isolation.py",),
           "tests/test_mutants_isolation.py tests/test_sandbox.py",
           "tests/test_sandbox_isolation.py (slow: three graders) holds more of it"),
    Target("recording", ("sdpa_course/grading/recording.py",
                         "sdpa_course/grading/submissions.py",
                         "sdpa_course/grading/gradebook.py"),
           # in this order (pytest keeps it): the quick ones first, so most mutants die early
           " ".join(f"tests/test_grade.py::{name}" for name in (
               "test_read_regular_reads_one_byte_past_any_limit_odd_or_even",
               "test_a_misnamed_assignment_folder_is_named_as_it_is_spelt_the_first_of_two_in_"
               "order",
               "test_the_schema_repair_drops_a_breaking_metadata_entry_and_renews_a_breaking_"
               "cell_id",
               "test_a_notebook_over_the_size_limit_is_failed_saying_its_size_in_mb",
               "test_a_timestamp_or_notebook_that_is_a_link_is_never_read_through",
               "test_nbgrader_metadata_the_release_did_not_give_is_removed_and_reported",
               "test_many_forged_cells_are_listed_ten_by_name_and_the_rest_counted",
               "test_the_releases_own_cells_keep_their_metadata_graded_answer_and_locked_alike",
               "test_nbgrader_metadata_edited_on_the_releases_cells_is_put_back_as_released",
               "test_a_notebook_left_with_one_answer_cell_is_still_this_assignments",
               "test_rerun_grades_nothing_already_recorded_and_force_regrades_all",
               "test_resubmission_is_regraded_and_a_broken_one_leaves_no_stale_score",
               "test_a_resubmission_changing_only_its_timestamp_is_regraded_with_the_late_"
               "penalty",
               "test_force_regrade_keeps_hand_given_marks",
               "test_a_failed_resubmission_after_hand_marks_keeps_the_hand_marks_and_no_"
               "automatic_score",
               "test_ignored_source_files_never_reach_autograded_or_feedback",
               "test_a_course_database_elsewhere_is_honoured",
               "test_interrupted_run_resumes_with_the_unrecorded_student",
               "test_every_student_gets_a_status_and_the_failed_ones_a_reason",
               "test_scores_reach_nbgrader_gradebook_with_partial_credit",
               "test_written_answer_waits_for_a_hand_grade",
               "test_submission_timestamp_is_recorded",
               "test_failed_students_hold_no_score_in_the_gradebook",
               "test_a_deleted_graded_cell_is_restored_and_scored",
               "test_feedback_is_written_for_graded_students_only",
               "test_json_of_a_failed_student_has_a_reason_and_no_score",
               "test_a_student_who_edits_graded_cells_to_claim_points_gets_only_what_she_earned",
               "test_a_deep_or_crowded_submission_folder_is_walked_within_bounds",
               "test_a_file_that_grew_past_the_size_limit_while_copied_leaves_nothing",
               "test_a_notebook_over_the_size_limit_is_told_apart_by_its_size_and_time_never_"
               "read",
               "test_files_and_other_assignments_among_the_student_folders_are_passed_over",
           )) + " tests/test_gradebook_lookups.py " + " ".join(
               f"tests/test_grading_loop.py::{name}" for name in (
                   "test_a_written_answer_left_unanswered_is_pending_and_flagged_for_marking",
                   "test_marking_a_written_answer_pending_touches_this_assignment_alone",
                   "test_a_symlink_in_a_submission_is_never_followed"))),
    Target("records", ("sdpa_course/reports/records.py",),
           "tests/test_records.py tests/test_grade.py -m 'not slow' -k 'test_records or "
           "rerun or interrupted or resubmission or timestamp or json or failed'"),
)}
# Names for several targets at once.
GROUPS = {
    "sdpa_ref": ("ref-softmax", "ref-attention", "ref-flash", "ref-torch-masks"),
    "sandbox": ("limits", "isolation"),
    "grading": ("recording", "records"),
}


def ensure_cosmic_ray() -> None:
    if importlib.util.find_spec("cosmic_ray") is None:
        print(f"installing {COSMIC_RAY} into {sys.prefix} ...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", COSMIC_RAY],
                       check=True)


def copy_tree(dest: Path) -> None:
    """The checkout's files as git sees them (tracked, or new and not ignored)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)


def annotation_spans(path: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where a module's type annotations are, when `from __future__ import annotations`
    means they are never evaluated: a mutant there changes nothing that runs."""
    module = ast.parse(path.read_text())
    lazy = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
               and any(alias.name == "annotations" for alias in node.names)
               for node in module.body)
    if not lazy:
        return []
    spans = []
    for node in ast.walk(module):
        notes = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            notes = [a.annotation for a in (*arguments.posonlyargs, *arguments.args,
                                             *arguments.kwonlyargs, arguments.vararg,
                                             arguments.kwarg) if a is not None]
            notes.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            notes = [node.annotation]
        spans += [((n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset))
                  for n in notes if n is not None]
    return spans


def skip_annotation_mutants(session: Path) -> int:
    """Mark the mutants inside never-evaluated annotations as skipped; how many."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    spans: dict[str, list] = {}
    skipped = 0
    with use_db(str(session)) as db:
        for item in list(db.pending_work_items):
            for mutation in item.mutations:
                path = str(mutation.module_path)
                if path not in spans:
                    spans[path] = annotation_spans(Path(path))
                start = tuple(mutation.start_pos)
                if any(a <= start < b for a, b in spans[path]):
                    db.set_result(item.job_id, WorkResult(
                        output="in a type annotation, never evaluated", test_outcome=None,
                        diff=None, worker_outcome=WorkerOutcome.SKIPPED))
                    skipped += 1
                    break
    return skipped


def sample_mutants(session: Path, size: int, seed: int) -> int:
    """Keep `size` of the pending mutants, drawn at random with `seed`; mark the others as
    skipped. How many were left out. The draw is made from the mutants in the order of their
    places in the source (cosmic-ray's job ids are new at each init), so that the same seed
    on the same source draws the same mutants."""
    import random

    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with use_db(str(session)) as db:
        pending = [item.job_id for item in sorted(
            db.pending_work_items, key=lambda item: [
                (str(m.module_path), m.operator_name, m.occurrence) for m in item.mutations])]
        chosen = set(random.Random(seed).sample(pending, min(size, len(pending))))
        left_out = [job for job in pending if job not in chosen]
        db.set_multiple_results(left_out, WorkResult(
            output="not sampled", test_outcome=None, diff=None,
            worker_outcome=WorkerOutcome.SKIPPED))
    return len(left_out)


def mutant_key(path: str, operator: str, occurrence: int) -> str:
    """A mutant's name that holds across sessions (cosmic-ray's job ids do not): the module,
    relative to the checkout, the operator and which occurrence of it in the module."""
    return f"{path} {operator} #{occurrence}"


def read_excluded(paths: list[Path]) -> set[str]:
    """The keys of the mutants that ran in the runs recorded in `paths` (OUT/<target>.json)."""
    return {entry["key"] for path in paths for entry in json.loads(path.read_text())}


def exclude_mutants(session: Path, tree: Path, excluded: set[str]) -> int:
    """Mark the pending mutants that ran before (their key in `excluded`) as skipped; how
    many."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with use_db(str(session)) as db:
        again = [item.job_id for item in db.pending_work_items
                 if any(mutant_key(str(Path(m.module_path).relative_to(tree)), m.operator_name,
                                   m.occurrence) in excluded for m in item.mutations)]
        db.set_multiple_results(again, WorkResult(
            output="ran before", test_outcome=None, diff=None,
            worker_outcome=WorkerOutcome.SKIPPED))
    return len(again)


def environment(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def tool(name: str) -> str:
    return str(BIN / name)


def run_target(target: Target, out: Path, keep: bool, sample: int | None = None,
               seed: int = 0, deadline: float | None = None,
               excluded: frozenset[str] = frozenset()) -> dict:
    """Mutate, test, report: the target's counts, its survivors written to OUT/<name>.txt."""
    if deadline is not None and deadline - time.monotonic() <= 0:
        return {"target": target.name, "error": "not started: the budget was spent"}
    work = Path(tempfile.mkdtemp(prefix=f"mutation-{target.name}-"))
    tree = work / "tree"
    tree.mkdir()
    try:
        copy_tree(tree)
        env = environment(tree)
        env["XDG_CACHE_HOME"] = str(work / "cache")  # cosmic-ray's plugins cache their lists
        test_command = f"{sys.executable} {PYTEST} {target.tests}"
        started = time.monotonic()
        baseline = subprocess.run(test_command, shell=True, cwd=tree, env=env,
                                  capture_output=True, text=True)
        seconds = time.monotonic() - started
        if baseline.returncode != 0:
            return {"target": target.name, "error": "the tests fail without any mutant:\n"
                    + baseline.stdout[-3000:] + baseline.stderr[-2000:]}
        config = work / "config.toml"
        modules = ", ".join(json.dumps(str(tree / m)) for m in target.modules)
        config.write_text(
            "[cosmic-ray]\n"
            f"module-path = [{modules}]\n"
            f"timeout = {max(60.0, 4 * seconds):.0f}\n"
            "excluded-modules = []\n"
            f"test-command = {json.dumps(test_command)}\n"
            "[cosmic-ray.distributor]\nname = \"local\"\n")
        session = work / "session.sqlite"
        for command in ([tool("cosmic-ray"), "init", str(config), str(session)],
                        [tool("cr-filter-pragma"), str(session)],
                        "annotations",
                        [tool("cosmic-ray"), "exec", str(config), str(session)]):
            if command == "annotations":
                skip_annotation_mutants(session)
                if excluded:
                    exclude_mutants(session, tree, excluded)
                if sample is not None:
                    sample_mutants(session, sample, seed)
                continue
            if command[1] == "exec" and deadline is not None:
                if not run_for(command, deadline - time.monotonic(), cwd=tree, env=env):
                    print(f"{target.name}: stopped at the end of the budget", flush=True)
                continue
            done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                return {"target": target.name, "error": f"{' '.join(command)} failed:\n"
                        + done.stderr[-3000:]}
        dump = subprocess.run([tool("cosmic-ray"), "dump", str(session)], cwd=tree, env=env,
                              capture_output=True, text=True, check=True).stdout
        return summarise(target, dump, tree, out, seconds)
    finally:
        if keep:
            print(f"{target.name}: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run_for(command: list[str], seconds: float, **popen) -> bool:
    """Run a command for at most `seconds`, then stop it and whatever it started (its own
    process group); whether it finished by itself. What it finished stays in its session."""
    if seconds <= 0:
        return False
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True, **popen)
    try:
        process.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        return False


def summarise(target: Target, dump: str, tree: Path, out: Path, seconds: float) -> dict:
    counts = {"killed": 0, "killed by timeout": 0, "survived": 0, "incompetent": 0,
              "skipped": 0, "ran before": 0, "not sampled": 0, "pending": 0}
    survivors = []
    ran = []  # every mutant whose tests ran: OUT/<target>.json, for --exclude-from
    for line in dump.splitlines():
        item, result = json.loads(line)
        if result is None:
            counts["pending"] += 1
            continue
        if result.get("worker_outcome") == "skipped":
            why = result.get("output")
            counts[why if why in ("not sampled", "ran before") else "skipped"] += 1
            continue
        outcome = result.get("test_outcome")
        counts[outcome if outcome in counts else "incompetent"] += 1
        # cosmic-ray counts tests that overran its timeout as killed: say which
        timed_out = outcome == "killed" and result.get("output") == "timeout"
        counts["killed by timeout"] += timed_out
        ran += [{"key": mutant_key(str(Path(m["module_path"]).relative_to(tree)),
                                   m["operator_name"], m["occurrence"]),
                 "line": m["start_pos"][0],
                 "outcome": "killed by timeout" if timed_out else outcome or "incompetent"}
                for m in item["mutations"]]
        if outcome == "survived":
            survivors.append((item, result))
    lines = [f"# {target.name}: {sum(counts.values()) - counts['killed by timeout']} mutants, "
             + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
             + f"\n# tests: {target.tests} ({seconds:.0f} s unmutated)"]
    for item, result in survivors:
        for mutation in item["mutations"]:
            where = Path(mutation["module_path"]).relative_to(tree)
            lines.append(f"\n## {where}:{mutation['start_pos'][0]} "
                         f"{mutation['operator_name']} #{mutation['occurrence']}")
        lines.append(result.get("diff", "").replace(str(tree) + "/", ""))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{target.name}.txt").write_text("\n".join(lines) + "\n")
    (out / f"{target.name}.json").write_text(json.dumps(ran, indent=1) + "\n")
    return {"target": target.name, **counts, "report": str(out / f"{target.name}.txt")}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", metavar="TARGET",
                        help=f"one or more of: {', '.join(TARGETS)}; or a group: "
                             + "; ".join(f"{g} = {', '.join(ts)}" for g, ts in GROUPS.items()))
    parser.add_argument("--all", action="store_true", help="every target")
    parser.add_argument("--list", action="store_true", help="list the targets and stop")
    parser.add_argument("--jobs", type=int, default=1, help="targets run side by side")
    parser.add_argument("--out", type=Path, default=ROOT / "mutation-results")
    parser.add_argument("--keep", action="store_true", help="keep each target's work folder")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="run N of each target's mutants, drawn at random")
    parser.add_argument("--seed", type=int, default=0, help="the draw of --sample")
    parser.add_argument("--budget", type=float, metavar="SECONDS",
                        help="stop the run after this long and report what ran")
    parser.add_argument("--exclude-from", type=Path, nargs="+", default=[], metavar="JSON",
                        help="leave out the mutants that ran in these earlier runs "
                             "(their OUT/<target>.json), before --sample draws")
    args = parser.parse_args()
    names = [n for t in args.targets for n in GROUPS.get(t, (t,))]
    unknown = [t for t in names if t not in TARGETS]
    if unknown:
        parser.error(f"unknown targets {', '.join(unknown)}: choose from "
                     f"{', '.join([*TARGETS, *GROUPS])}")
    if args.list or not (args.targets or args.all):
        for group, members in GROUPS.items():
            print(f"group {group}: {', '.join(members)}")
        for target in TARGETS.values():
            print(f"{target.name:<16} {' '.join(target.modules)}\n{'':<16} tests: {target.tests}"
                  + (f"\n{'':<16} note: {target.note}" if target.note else ""))
        return 0
    ensure_cosmic_ray()
    chosen = list(TARGETS.values()) if args.all else [TARGETS[t] for t in dict.fromkeys(names)]
    print("start: load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    failed = False
    deadline = None if args.budget is None else time.monotonic() + args.budget
    excluded = frozenset(read_excluded(args.exclude_from))
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for result in pool.map(lambda t: run_target(t, args.out, args.keep, args.sample,
                                                        args.seed, deadline, excluded), chosen):
            if "error" in result:
                failed = True
                print(f"{result['target']}: {result['error']}", flush=True)
            else:
                counts = ", ".join(f"{result[k]} {k}" for k in
                                   ("killed", "killed by timeout", "survived",
                                    "incompetent", "skipped",
                                             "ran before", "not sampled", "pending")
                                   if result[k])
                print(f"{result['target']}: {counts}; survivors in {result['report']}",
                      flush=True)
    print("end: load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

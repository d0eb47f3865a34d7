"""The Dask worker's side of `sdpa-course grade --scheduler`: a plugin and the grading task.

The instructor registers `GradingPlugin` when it connects; on every worker (and on any that
joins later) its `setup` checks that the worker runs the instructor's kit and exercises
(`kit_version`) and refuses otherwise, then starts the worker's sandbox pool (one zygote per
worker process, as in the local pool). `grade_task` grades one submission's contents with the
engine (`autograder.engine.grade_content`) and returns a plain dict; it never sees a file of
the instructor's nor the gradebook. Workers need the kit installed:
`pip install 'sdpa-course[dask]'`.
"""

from __future__ import annotations

from distributed import WorkerPlugin, get_worker

from sdpa_course.engine_call import grade_bytes, sandbox_pool
from sdpa_course.errors import GradingFailed
from sdpa_course.grading.kit_version import kit_fingerprint, version_mismatch

PLUGIN_NAME = "sdpa-course-grading"


class KitMismatch(Exception):
    """This worker runs another kit or other exercises than the instructor: it will not grade."""


def _refusal(expected: dict[str, str], where: str) -> str | None:
    problem = version_mismatch(expected, kit_fingerprint())
    return f"the Dask worker at {where} refuses to grade: {problem}" if problem else None


class GradingPlugin(WorkerPlugin):
    """Checks the worker's kit against the instructor's; keeps one sandbox pool per worker."""

    name = PLUGIN_NAME

    def __init__(self, expected: dict[str, str]):
        self.expected = dict(expected)
        self._pool = None

    def setup(self, worker) -> None:
        refusal = _refusal(self.expected, worker.address)
        if refusal:
            raise KitMismatch(refusal)
        self._pool = sandbox_pool()
        if self._pool is not None:
            try:
                self._pool.start(wait=False)  # the zygote boots while the first task travels
            except Exception:  # no fork-server: the engine starts its sandbox per submission
                self._pool = None

    def pool(self):
        """The worker's sandbox pool (None: the engine starts a sandbox per submission)."""
        return self._pool

    def teardown(self, worker) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def _plugin() -> GradingPlugin | None:
    try:
        plugin = get_worker().plugins.get(PLUGIN_NAME)
    except ValueError:
        return None
    return plugin if isinstance(plugin, GradingPlugin) else None


def grade_task(content: bytes, name: str, expected: dict[str, str]) -> dict:
    """Grade one submission's contents on this worker: {"report": ...} or {"error": ...}.

    Pure: the same contents and kit give the same report, so Dask may run it again
    on another worker when one dies. A fault of the kit (not of the submission) is raised, so
    Dask's `retries` try once more and the instructor then records it as "retry next run".
    """
    try:
        where = get_worker().address
    except ValueError:  # called outside a worker, e.g. directly in a test
        where = "this process"
    refusal = _refusal(expected, where)  # also on a worker whose plugin setup failed
    if refusal:
        raise KitMismatch(refusal)
    plugin = _plugin()
    pool = plugin.pool() if plugin is not None and plugin.expected == expected else None
    try:
        return {"report": grade_bytes(content, name, pool=pool)}
    except GradingFailed as err:
        if err.retry:
            raise
        return {"error": str(err)}

"""Smoke test of benchmarks/bench_reference.py at tiny sizes: it runs, nothing is timed."""

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sdpa_ref import attention

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_reference.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_reference", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_method_runs_and_computes_attention(bench):
    methods = bench.make_methods(block_q=16, block_k=24)
    rows = bench.run([40, 64], ["float32", "float64"], repeats=3, methods=methods)
    assert {(r["T"], r["dtype"], r["method"]) for r in rows} == {
        (T, dtype, name) for T in (40, 64) for dtype in ("float32", "float64") for name in methods
    }
    for r in rows:
        assert r["median"] >= r["min"] > 0 and r["repeats"] == 3
        if r["method"] != "torch":
            assert r["peak"] > 0
        if r["method"] != "bound":  # the bound skips the softmax on purpose
            assert r["error"] < (1e-5 if r["dtype"] == "float32" else 1e-12), r
    flash32 = [r for r in rows if r["method"] == "flash" and r["dtype"] == "float32"]
    assert all(r["out_dtype"] == "float32" for r in flash32)


def test_the_bound_is_the_two_products_and_allocates_like_the_others(bench):
    rng = np.random.default_rng(3)
    Q, K, V = (rng.normal(size=(50, 8)) for _ in range(3))
    np.testing.assert_array_equal(bench.bound(Q, K, V), (Q @ K.T) @ V)
    assert bench.peak_extra_bytes(bench.bound, Q, K, V) >= 50 * 50 * 8  # its (T, T) scores


def test_the_answer_key_is_attention_computed_apart_in_long_double(bench):
    rng = np.random.default_rng(4)
    Q, K, V = (rng.normal(size=(30, 8)) for _ in range(3))
    rows = bench.key_rows(30)
    key = bench.answer_key(Q, K, V, rows)
    assert key.dtype == np.longdouble and rows[0] == 0 and rows[-1] == 29
    want = attention(Q, K, V)[0][rows]  # (r, 8)
    np.testing.assert_allclose(key.astype(np.float64), want, rtol=1e-13, atol=1e-15)
    if np.finfo(np.longdouble).eps < np.finfo(np.float64).eps:  # x86: a 64-bit mantissa
        assert np.any(key != want)  # digits beyond float64: attention is not its own key


def test_the_key_rows_are_spread_over_the_output(bench):
    assert list(bench.key_rows(5)) == [0, 1, 2, 3, 4]
    rows = bench.key_rows(8192)
    assert len(rows) == bench.KEY_ROWS and rows[0] == 0 and rows[-1] == 8191


def test_the_neighbour_spins_while_inside_and_is_stopped_after_even_on_error(bench):
    with pytest.raises(RuntimeError), bench.neighbour() as process:
        assert process.poll() is None  # still running
        raise RuntimeError("the benchmark failed")
    assert process.poll() is not None


def ended(pid):
    """Whether a process is gone or a zombie (Linux: from /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_neighbour_ends_by_itself_when_the_benchmark_dies_without_stopping_it(bench):
    # A starter that launches the neighbour and exits at once, as a benchmark killed -9 would.
    # The neighbour's output goes nowhere: a pipe would keep run() waiting for it.
    starter = (
        "import os, subprocess, sys\n"
        "neighbour = [sys.executable, '-c', sys.argv[1], str(os.getpid())]\n"
        "quiet = {'stdout': subprocess.DEVNULL, 'stderr': subprocess.DEVNULL}\n"
        "print(subprocess.Popen(neighbour, **quiet).pid)\n"
    )
    started = subprocess.run([sys.executable, "-c", starter, bench.NEIGHBOUR],
                             capture_output=True, text=True, check=True, timeout=60)
    pid = int(started.stdout)
    deadline = time.monotonic() + 30  # it checks its parent every million iterations
    while not ended(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not ended(pid):
        os.kill(pid, signal.SIGKILL)  # leave nothing behind, then fail
        pytest.fail(f"neighbour {pid} still running 30 s after its parent died")


def test_the_lesson_code_is_the_seed_code(bench):
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(6, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 8))
    mask = np.triu(np.ones((6, 6), dtype=bool), k=1)
    out, attn = bench.scaled_dot_product_attention(Q, K, V, mask=mask)
    np.testing.assert_allclose(attn.sum(axis=1), 1.0)
    np.testing.assert_allclose(attn[mask], 0.0)


def test_the_command_line_prints_a_table_and_draws_the_plot(bench, tmp_path, capsys):
    png = tmp_path / "bench.png"
    bench.main(["--sizes", "32", "48", "--repeats", "1", "--settle", "0", "--plot", str(png)])
    printed = capsys.readouterr().out
    for name in ("lesson", "attention", "flash", "bound"):
        assert f" {name} " in printed
    assert "median of 1 runs" in printed and "start: load average" in printed
    assert "end:   load average" in printed and "BLAS threads:" in printed
    assert png.read_bytes().startswith(b"\x89PNG")

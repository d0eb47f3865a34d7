"""Smoke test of benchmarks/bench_reference.py at tiny sizes: it runs, nothing is timed."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_reference.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_reference", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_method_runs_and_computes_attention(bench):
    methods = bench.make_methods(block_q=16, block_k=24)
    rows = bench.run([40, 64], ["float32", "float64"], repeats=1, methods=methods)
    assert {(r["T"], r["dtype"], r["method"]) for r in rows} == {
        (T, dtype, name) for T in (40, 64) for dtype in ("float32", "float64") for name in methods
    }
    for r in rows:
        assert r["best"] > 0 and r["median"] >= r["best"]
        if r["method"] != "torch":
            assert r["peak"] > 0
        if r["method"] != "bound":  # the bound skips the softmax on purpose
            assert r["error"] < (1e-5 if r["dtype"] == "float32" else 1e-12), r
    flash32 = [r for r in rows if r["method"] == "flash" and r["dtype"] == "float32"]
    assert all(r["out_dtype"] == "float32" for r in flash32)


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
    assert png.read_bytes().startswith(b"\x89PNG")

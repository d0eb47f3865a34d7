"""Benchmark: the lesson's attention vs sdpa_ref vs PyTorch vs the matmul-only bound.

A script, not a test. For each sequence length T (n = m = T, d_k = d_v = 64) and dtype it
times, round-robin so that noise from other processes spreads evenly over the methods:

    lesson     the lesson's naive code, copied below from the seed
    attention  sdpa_ref.attention (builds the (T, T) weights)
    flash      sdpa_ref.flash_attention (tiles, online softmax)
    torch      torch.nn.functional.scaled_dot_product_attention on CPU, when installed
    bound      just the two products, Q @ K^T and W @ V, into preallocated outputs

and measures peak extra memory with tracemalloc (numpy reports its buffers to it; PyTorch
does not, so torch shows "n/a"). It prints a table and draws time and memory against T.

    .venv/bin/python benchmarks/bench_reference.py            # T = 1024, 4096, 8192
    .venv/bin/python benchmarks/bench_reference.py --quick    # small smoke run
"""

import argparse
import ctypes
import glob
import os
import statistics
import time
import tracemalloc
from pathlib import Path

import numpy as np

from sdpa_ref import attention, flash_attention

RESULTS = Path(__file__).resolve().parent / "results"
MiB = 2**20


# ---- The lesson's code, copied verbatim from the seed ("Implementation"). Not ours. ----
def scaled_dot_product_attention(Q, K, V, mask=None):
    """
    Q: (n, d_k)  K: (m, d_k)  V: (m, d_v)  mask: (n, m) boolean (True = masked out)
    Returns: (n, d_v) output, (n, m) attention weights
    """
    d_k = Q.shape[-1]
    scores = Q @ K.T / np.sqrt(d_k)          # (n, m)
    if mask is not None:
        scores[mask] = -1e9                   # set masked positions to -inf
    attn = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attn /= attn.sum(axis=-1, keepdims=True)  # softmax row-wise
    out = attn @ V                            # (n, d_v)
    return out, attn
# ---- End of the lesson's code. ----


def make_methods(block_q=512, block_k=1024):
    """Name -> prepare(Q, K, V) -> run(): preparing (allocating) is not timed, running is."""
    methods = {
        "lesson": lambda Q, K, V: lambda: scaled_dot_product_attention(Q, K, V)[0],
        "attention": lambda Q, K, V: lambda: attention(Q, K, V)[0],
        "flash": lambda Q, K, V: lambda: flash_attention(
            Q, K, V, block_q=block_q, block_k=block_k
        ),
        "bound": prepare_bound,
    }
    torch = _torch()
    if torch is not None:
        sdpa = torch.nn.functional.scaled_dot_product_attention
        # As (batch, heads, T, d): 2-D inputs miss PyTorch's fused CPU kernel (3x slower).
        methods["torch"] = lambda Q, K, V: lambda: sdpa(
            *(torch.from_numpy(x)[None, None] for x in (Q, K, V))
        )[0, 0].numpy()
    return methods


def prepare_bound(Q, K, V):
    """The two products every method must do, into preallocated outputs: a speed limit."""
    scores = np.empty((Q.shape[0], K.shape[0]), Q.dtype)  # (T, T)
    out = np.empty((Q.shape[0], V.shape[1]), Q.dtype)  # (T, d_v)

    def run():
        np.matmul(Q, K.T, out=scores)  # (T, d) @ (d, T) -> (T, T)
        return np.matmul(scores, V, out=out)  # (T, T) @ (T, d) -> (T, d)

    return run


def inputs(T, d, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((T, d)).astype(dtype) for _ in range(3))  # 3 x (T, d)


def peak_extra_bytes(prepare, Q, K, V):
    """Peak memory numpy allocates while preparing and running once, above what it held."""
    tracemalloc.start()
    try:
        prepare(Q, K, V)()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run(sizes, dtypes, d=64, repeats=3, methods=None, settle=0.0):
    """One row per (T, dtype, method): times, peak memory and the error against `attention`.

    settle: seconds to pause before each timed call. OpenBLAS and OpenMP worker threads
    spin for a while after a call; without a pause they steal a core from the next method.
    """
    methods = methods or make_methods()
    rows = []
    for T in sizes:
        for dtype in dtypes:
            Q, K, V = inputs(T, d, dtype)
            expected = attention(Q.astype(np.float64), K, V)[0]  # (T, d), float64 answer key
            runs = {name: prepare(Q, K, V) for name, prepare in methods.items()}
            times = {name: [] for name in methods}
            outs = {name: fn() for name, fn in runs.items()}  # warm-up, not timed
            for _ in range(repeats):  # round-robin: each method sees the same noise
                for name, fn in runs.items():
                    time.sleep(settle)
                    start = time.perf_counter()
                    outs[name] = fn()
                    times[name].append(time.perf_counter() - start)
            del runs  # free the bound's (T, T) buffer before measuring memory
            for name, prepare in methods.items():
                peak = None if name == "torch" else peak_extra_bytes(prepare, Q, K, V)
                rows.append(
                    {
                        "T": T,
                        "dtype": np.dtype(dtype).name,
                        "method": name,
                        "out_dtype": outs[name].dtype.name,
                        "best": min(times[name]),
                        "median": statistics.median(times[name]),
                        "peak": peak,
                        # The bound skips the softmax: its output is not attention.
                        "error": None if name == "bound" else np.max(np.abs(outs[name] - expected)),
                    }
                )
            del outs
    return rows


def table(rows):
    """The printed table, with ratios of best times within each (T, dtype)."""
    best = {(r["T"], r["dtype"], r["method"]): r["best"] for r in rows}
    head = (
        f"{'T':>5} {'dtype':7} {'method':9} {'out':7} {'best s':>8} {'median s':>9} "
        f"{'peak MiB':>9} {'bound/t':>7} {'lesson/t':>8} {'max|err|':>9}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        key = (r["T"], r["dtype"])
        peak = "n/a" if r["peak"] is None else f"{r['peak'] / MiB:.1f}"
        error = "-" if r["error"] is None else f"{r['error']:.1e}"
        lines.append(
            f"{r['T']:>5} {r['dtype']:7} {r['method']:9} {r['out_dtype']:7} {r['best']:8.4f} "
            f"{r['median']:9.4f} {peak:>9} {best[key + ('bound',)] / r['best']:7.2f} "
            f"{best[key + ('lesson',)] / r['best']:8.2f} {error:>9}"
        )
    return "\n".join(lines)


def targets(rows, T=8192, dtype="float64"):
    """The issue's targets for flash at T = 8192 in float64, with the measured figures."""
    by = {r["method"]: r for r in rows if r["T"] == T and r["dtype"] == dtype}
    if "flash" not in by:
        return ""
    flash = by["flash"]
    checks = [
        ("time vs the matmul-only bound", by["bound"]["best"] / flash["best"], ">=", 0.80),
        ("speed-up over the lesson's code", by["lesson"]["best"] / flash["best"], ">=", 1.4),
        ("peak extra memory, MiB", flash["peak"] / MiB, "<=", 64),
    ]
    lines = [f"targets for flash at T={T} {dtype} (best of each):"]
    for name, value, op, goal in checks:
        met = value >= goal if op == ">=" else value <= goal
        lines.append(f"  {name}: {value:.2f} (target {op} {goal}) {'met' if met else 'MISSED'}")
    return "\n".join(lines)


def plot(rows, path):
    """Time and peak memory against T, one line per method, solid float64, dashed float32."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(11, 4.2))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    sizes = sorted({r["T"] for r in rows})
    for color, method in zip(plt.cm.tab10.colors, methods, strict=False):
        for dtype, style in (("float64", "-"), ("float32", "--")):
            mine = [r for r in rows if r["method"] == method and r["dtype"] == dtype]
            if not mine:
                continue
            Ts = [r["T"] for r in mine]
            label = f"{method} {dtype}"
            ax_time.plot(Ts, [r["median"] for r in mine], style, color=color, marker="o",
                         label=label)
            if all(r["peak"] is not None for r in mine):
                ax_mem.plot(Ts, [r["peak"] / MiB for r in mine], style, color=color, marker="o",
                            label=label)
    for ax, ylabel in ((ax_time, "median time (s)"), (ax_mem, "peak extra memory (MiB)")):
        ax.set(xscale="log", yscale="log", xlabel="sequence length T (n = m, d = 64)",
               ylabel=ylabel)
        ax.set_xticks(sizes, [str(T) for T in sizes])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())  # only the Ts measured
        ax.grid(True, which="both", alpha=0.3)
    ax_time.legend(fontsize=7, ncol=2)
    fig.suptitle("Scaled dot-product attention on CPU: time and memory against T")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def environment():
    """What the figures depend on: BLAS kernel, threads, load."""
    coretype = os.environ.get("OPENBLAS_CORETYPE", "(unset)")
    lines = [f"numpy {np.__version__}; OPENBLAS_CORETYPE={coretype}"]
    core = _openblas_corename()
    if core:
        lines.append(f"OpenBLAS kernel in use: {core}")
    torch = _torch()
    if torch is not None:
        lines.append(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    lines.append(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.2f} (shared machine)")
    return "\n".join(lines)


def _openblas_corename():
    """The OpenBLAS kernel numpy's bundled library picked at run time, if it can be asked."""
    for lib in glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*blas*")):
        for symbol in ("scipy_openblas_get_corename64_", "openblas_get_corename"):
            try:
                get = getattr(ctypes.CDLL(lib), symbol)
            except (AttributeError, OSError):
                continue
            get.restype = ctypes.c_char_p
            return get().decode()
    return None


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run: T = 256, 512")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 8192])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--settle", type=float, default=0.2,
                        help="seconds of pause before each timed call (spinning BLAS threads)")
    parser.add_argument("--block-q", type=int, default=512)
    parser.add_argument("--block-k", type=int, default=1024)
    parser.add_argument("--plot", type=Path, default=RESULTS / "bench_reference.png")
    args = parser.parse_args(argv)
    sizes = [256, 512] if args.quick else args.sizes
    print(environment())
    rows = run(sizes, args.dtypes, repeats=args.repeats,
               methods=make_methods(args.block_q, args.block_k), settle=args.settle)
    print(table(rows))
    if targets(rows):
        print(targets(rows))
    print(f"plot: {plot(rows, args.plot)}")


if __name__ == "__main__":
    main()

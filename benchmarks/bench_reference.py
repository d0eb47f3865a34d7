"""Benchmark: the lesson's attention vs sdpa_ref vs PyTorch vs the matmul-only bound.

A script, not a test. For each sequence length T (n = m = T, d_k = d_v = 64) and dtype it
times, round-robin so that noise from other processes spreads evenly over the methods:

    lesson     the lesson's naive code, copied below from the seed
    attention  sdpa_ref.attention (builds the (T, T) weights)
    flash      sdpa_ref.flash_attention (tiles, online softmax)
    torch      torch.nn.functional.scaled_dot_product_attention on CPU, when installed
    bound      just the two products, (Q @ K^T) @ V: no method can do less arithmetic

The same work for all: every method, the bound too, allocates its arrays inside the timed
region; glibc is told to keep freed memory, so those allocations reuse pages the process
has touched before instead of faulting in fresh ones (from 0.03 s to over a second per
512 MiB here, depending on what else the machine does). All methods run in this one process
with the same BLAS threads. Times are medians of --repeats runs (7 by default); ratios
are of medians. The error column compares each method with an answer key computed apart
from sdpa_ref, in long double, on 64 rows spread over the output. Peak extra memory is
measured with tracemalloc (numpy reports its buffers to it; PyTorch does not: "n/a").

    .venv/bin/python benchmarks/bench_reference.py              # T = 1024, 4096, 8192
    .venv/bin/python benchmarks/bench_reference.py --neighbour  # beside a CPU-bound process
    .venv/bin/python benchmarks/bench_reference.py --quick      # small smoke run
"""

import argparse
import contextlib
import ctypes
import glob
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from sdpa_ref import attention, flash_attention

RESULTS = Path(__file__).resolve().parent / "results"
MiB = 2**20
KEY_ROWS = 64  # rows of the output checked against the long-double answer key


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


def bound(Q, K, V):
    """The two products every method must do, and nothing else: a speed limit."""
    return (Q @ K.T) @ V  # (T, d) @ (d, T) -> (T, T); (T, T) @ (T, d) -> (T, d)


def make_methods(block_q=None, block_k=None):
    """Name -> method(Q, K, V) -> out (T, d). Blocks None: flash_attention's own defaults."""
    blocks = {k: v for k, v in (("block_q", block_q), ("block_k", block_k)) if v is not None}
    methods = {
        "lesson": lambda Q, K, V: scaled_dot_product_attention(Q, K, V)[0],
        "attention": lambda Q, K, V: attention(Q, K, V)[0],
        "flash": lambda Q, K, V: flash_attention(Q, K, V, **blocks),
        "bound": bound,
    }
    torch = _torch()
    if torch is not None:
        sdpa = torch.nn.functional.scaled_dot_product_attention
        # As (batch, heads, T, d): 2-D inputs miss PyTorch's fused CPU kernel (3x slower).
        methods["torch"] = lambda Q, K, V: sdpa(
            *(torch.from_numpy(x)[None, None] for x in (Q, K, V))
        )[0, 0].numpy()
    return methods


def inputs(T, d, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((T, d)).astype(dtype) for _ in range(3))  # 3 x (T, d)


def key_rows(T):
    """Which rows the answer key covers: KEY_ROWS of them, evenly spread, first and last."""
    return np.unique(np.linspace(0, T - 1, min(T, KEY_ROWS)).round().astype(int))


def answer_key(Q, K, V, rows):
    """softmax(Q K^T / sqrt(d_k)) V on some rows, in long double: sdpa_ref is not used."""
    q, k, v = (np.asarray(x, np.longdouble) for x in (Q[rows], K, V))  # (r, d), (T, d), (T, d)
    scores = q @ k.T / np.sqrt(np.longdouble(q.shape[-1]))  # (r, d) @ (d, T) -> (r, T)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))  # (r, T), unnormalised
    return (weights @ v) / weights.sum(axis=1, keepdims=True)  # (r, T) @ (T, d) -> (r, d)


def peak_extra_bytes(method, Q, K, V):
    """Peak memory numpy allocates while the method runs once, above what it held."""
    tracemalloc.start()
    try:
        method(Q, K, V)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run(sizes, dtypes, d=64, repeats=7, methods=None, settle=0.0):
    """One row per (T, dtype, method): median time, peak memory, error against the key.

    Round-robin, starting one method further on each round, so that each method sees the
    same noise and none always follows the same one. settle: seconds to pause before each
    timed call; OpenBLAS and OpenMP worker threads spin for a while after a call, and
    without a pause they steal a core from the next method.
    """
    methods = methods or make_methods()
    names = list(methods)
    rows = []
    for T in sizes:
        for dtype in dtypes:
            Q, K, V = inputs(T, d, dtype)
            rows_checked = key_rows(T)
            key = answer_key(Q, K, V, rows_checked)  # (r, d)
            times = {name: [] for name in names}
            outs = {name: methods[name](Q, K, V) for name in names}  # warm-up, not timed
            for i in range(repeats):
                for name in names[i % len(names):] + names[: i % len(names)]:
                    time.sleep(settle)
                    start = time.perf_counter()
                    outs[name] = methods[name](Q, K, V)
                    times[name].append(time.perf_counter() - start)
            for name in names:
                peak = None if name == "torch" else peak_extra_bytes(methods[name], Q, K, V)
                error = np.max(np.abs(outs[name][rows_checked] - key))
                rows.append(
                    {
                        "T": T,
                        "dtype": np.dtype(dtype).name,
                        "method": name,
                        "out_dtype": outs[name].dtype.name,
                        "median": statistics.median(times[name]),
                        "min": min(times[name]),
                        "repeats": len(times[name]),
                        "peak": peak,
                        # The bound skips the softmax: its output is not attention.
                        "error": None if name == "bound" else float(error),
                    }
                )
            del outs
    return rows


def table(rows):
    """The printed table, with ratios of median times within each (T, dtype)."""
    median = {(r["T"], r["dtype"], r["method"]): r["median"] for r in rows}
    head = (
        f"{'T':>5} {'dtype':7} {'method':9} {'out':7} {'median s':>9} {'min s':>8} "
        f"{'peak MiB':>9} {'bound/t':>7} {'lesson/t':>8} {'max|err|':>9}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        key = (r["T"], r["dtype"])
        peak = "n/a" if r["peak"] is None else f"{r['peak'] / MiB:.1f}"
        error = "-" if r["error"] is None else f"{r['error']:.1e}"
        lines.append(
            f"{r['T']:>5} {r['dtype']:7} {r['method']:9} {r['out_dtype']:7} "
            f"{r['median']:9.4f} {r['min']:8.4f} {peak:>9} "
            f"{median[key + ('bound',)] / r['median']:7.2f} "
            f"{median[key + ('lesson',)] / r['median']:8.2f} {error:>9}"
        )
    return "\n".join(lines)


def targets(rows, neighbour, T=8192, dtype="float64"):
    """The issue's targets for flash at T = 8192 in float64, judged on medians."""
    by = {r["method"]: r for r in rows if r["T"] == T and r["dtype"] == dtype}
    if "flash" not in by:
        return ""
    flash = by["flash"]
    checks = [
        ("time vs the matmul-only bound", by["bound"]["median"] / flash["median"], ">=",
         0.60 if neighbour else 0.80),
        ("speed-up over the lesson's code", by["lesson"]["median"] / flash["median"], ">=", 1.4),
        ("peak extra memory, MiB", flash["peak"] / MiB, "<=", 64),
    ]
    beside = "beside one CPU-bound process" if neighbour else "quiet"
    lines = [f"targets for flash at T={T} {dtype}, {beside} (medians of {flash['repeats']}):"]
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


# A CPU-bound loop that also ends once its parent, whose pid it is given, is gone: a
# benchmark killed -9 cannot stop it. (The pid comes as an argument: the parent might
# already be gone when the loop starts.)
NEIGHBOUR = """
import os, sys
while os.getppid() == int(sys.argv[1]):
    for _ in range(10**6):
        pass
"""


@contextlib.contextmanager
def neighbour():
    """One CPU-bound process beside the benchmark, as on a shared machine; always stopped."""
    process = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(os.getpid())])
    try:
        time.sleep(0.5)  # let it start spinning before anything is timed
        yield process
    finally:
        process.kill()
        process.wait()


def keep_freed_memory():
    """Ask glibc to keep freed memory, so each allocation reuses pages already touched.

    Large arrays otherwise come from a fresh mmap each time and pay a page fault per page,
    a cost that swings with what else the machine does. Returns False where this is not glibc.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # from glibc's <malloc.h>
    # No mmap for large blocks (they come from the heap), and never give the heap back.
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, -1))


def blas_threads(count=None):
    """The number of threads numpy's OpenBLAS uses (set it first if count is given)."""
    for lib in glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*blas*")):
        for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", "")):
            try:
                blas = ctypes.CDLL(lib)
                get = getattr(blas, f"{prefix}_get_num_threads{suffix}")
                if count is not None:
                    getattr(blas, f"{prefix}_set_num_threads{suffix}")(count)
            except (AttributeError, OSError):
                continue
            return get()
    return None


def environment(allocator, threads):
    """What the figures depend on: BLAS kernel and threads, allocator, load."""
    coretype = os.environ.get("OPENBLAS_CORETYPE", "(unset)")
    lines = [f"numpy {np.__version__}; OPENBLAS_CORETYPE={coretype}"]
    core = _openblas_corename()
    if core:
        lines.append(f"OpenBLAS kernel in use: {core}")
    lines.append(f"BLAS threads: {threads or 'unknown'}, for every method and the bound alike")
    torch = _torch()
    if torch is not None:
        lines.append(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    lines.append("every method allocates inside the timed region; "
                 + ("glibc keeps freed pages" if allocator else "allocator left as it is"))
    return "\n".join(lines)


def load():
    """The load average and, where Linux reports it, how often a task waited for a CPU."""
    line = "load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg())
    try:  # "some avg10=12.34 avg60=... total=..." on the first line
        waiting = Path("/proc/pressure/cpu").read_text().split()[1].split("=")[1]
    except (OSError, IndexError):
        return line
    return f"{line}; tasks waited for a CPU {waiting}% of the last 10 s"


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


def main(argv=None, allocator=False):
    """allocator: whether glibc was told to keep freed memory (the script does, tests do not)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run: T = 256, 512")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 8192])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per method (median)")
    parser.add_argument("--settle", type=float, default=0.2,
                        help="seconds of pause before each timed call (spinning BLAS threads)")
    parser.add_argument("--neighbour", action="store_true",
                        help="time beside one CPU-bound process, as on a shared machine")
    parser.add_argument("--threads", type=int, help="BLAS (and torch) threads; default: as found")
    parser.add_argument("--block-q", type=int, help="flash_attention's block_q (default: its own)")
    parser.add_argument("--block-k", type=int, help="flash_attention's block_k (default: its own)")
    parser.add_argument("--plot", type=Path, default=RESULTS / "bench_reference.png")
    args = parser.parse_args(argv)
    sizes = [256, 512] if args.quick else args.sizes
    if args.threads and _torch() is not None:
        _torch().set_num_threads(args.threads)
    print(environment(allocator, blas_threads(args.threads)))
    print(f"start: {load()}")
    with neighbour() if args.neighbour else contextlib.nullcontext() as beside:
        if beside is not None:
            print(f"neighbour: a CPU-bound python loop running beside, pid {beside.pid}")
        rows = run(sizes, args.dtypes, repeats=args.repeats,
                   methods=make_methods(args.block_q, args.block_k), settle=args.settle)
        print(f"end:   {load()}")
    print(f"times: median of {args.repeats} runs per method; errors: max |out - key| on "
          f"{KEY_ROWS} rows, key in long double ({np.finfo(np.longdouble).precision} digits)")
    print(table(rows))
    if targets(rows, args.neighbour):
        print(targets(rows, args.neighbour))
    print(f"plot: {plot(rows, args.plot)}")


if __name__ == "__main__":
    main(allocator=keep_freed_memory())  # before any large array exists

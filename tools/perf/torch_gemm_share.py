"""How much of PyTorch's CPU training step its matrix products take (docs/performance.md, "CPU, two threads
each side"; docs/performance-grid.md, "CPU").

For each config: PyTorch's own step (torch_mlp.train, eager, as bench-compare runs it) and, in the same process,
the products of one such step alone: the forward product of every layer, every weight gradient and every input
gradient but the first layer's (which autograd skips too), as torch.mm into preallocated outputs, with the
shapes and transposes of nn.Linear, so no allocation, bias, activation, loss or optimizer. Where OpenBLAS loads
(libopenblas.so.0, with the kernels brain's CPU plugin picks), the same products as brain's plugin issues them
too: cblas_sgemm, single-threaded, each product split in two as the plugin splits it, one half per thread, the
threads never waiting for each other (a floor under brain's products); and where oneDNN loads too (libdnnl), the
same calls routed as the plugin routes them (gemm.hpp: oneDNN from 2^20 multiply-adds per call). Rounds alternate.
One JSON line per round and a last one with the medians.

  python3 tools/perf/torch_gemm_share.py CONFIG [threads] [rounds] [--grid-points N --grid-seed S --grid-work W]
      (default 2 threads, 3 rounds; CONFIG a named config or a shape-grid point gNN, drawn as bench/torch_mlp.py
      draws it)
"""
import ctypes, json, os, statistics, sys, threading, time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from torch_mlp import grid_options, resolve, train  # noqa: E402


def products_ms(cfg, steps):
    """Milliseconds per step of the step's products alone, the median of five runs of `steps` steps."""
    b = cfg["batch"]
    widths = [cfg["inp"], *cfg["hidden"], cfg["out"]]
    layers = len(widths) - 1
    g = torch.Generator().manual_seed(0)
    w = [torch.randn(widths[l + 1], widths[l], generator=g) for l in range(layers)]
    a = [torch.randn(b, widths[l], generator=g) for l in range(layers)]  # each layer's input
    d = [torch.randn(b, widths[l + 1], generator=g) for l in range(layers)]  # each layer's dL/dz
    z = [torch.empty(b, widths[l + 1]) for l in range(layers)]
    dw = [torch.empty(widths[l + 1], widths[l]) for l in range(layers)]
    dx = [torch.empty(b, widths[l]) for l in range(layers)]

    def step():
        for l in range(layers):
            torch.mm(a[l], w[l].t(), out=z[l])
        for l in reversed(range(layers)):
            torch.mm(d[l].t(), a[l], out=dw[l])
            if l > 0:
                torch.mm(d[l], w[l], out=dx[l])

    def timed():
        t = time.perf_counter()
        for _ in range(steps):
            step()
        return (time.perf_counter() - t) / steps * 1e3

    return warm_median(timed)


def warm_median(timed):
    """One untimed run of `timed` (ms per step), then the median of five."""
    timed()
    return statistics.median(timed() for _ in range(5))


def load_openblas():
    """OpenBLAS with the kernel family brain's CPU plugin chooses (blas_library.cpp), or None."""
    flags = ""
    try:
        flags = next(l for l in open("/proc/cpuinfo") if l.startswith("flags"))
    except (OSError, StopIteration):
        pass
    if "OPENBLAS_CORETYPE" not in os.environ:
        if all(f" {f}" in flags for f in ("avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd")):
            os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
        elif " avx2" in flags and " fma" in flags:
            os.environ["OPENBLAS_CORETYPE"] = "Haswell"
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return None
    lib.openblas_set_num_threads(1)
    f, i, p = ctypes.c_float, ctypes.c_int, ctypes.c_void_p
    lib.cblas_sgemm.argtypes = [i, i, i, i, i, i, f, p, i, p, i, f, p, i]
    lib.cblas_sgemm.restype = None
    return lib


ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
ONEDNN_MIN_MACS = 1 << 20  # plugins/cpu/gemm.hpp's k_onednn_min_macs


def load_onednn():
    """oneDNN's dnnl_sgemm and its OpenMP runtime's omp_set_num_threads, or None."""
    for name in ("libdnnl.so.3", "libdnnl.so.2"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        f, i, p, c = ctypes.c_float, ctypes.c_int64, ctypes.c_void_p, ctypes.c_char
        lib.dnnl_sgemm.argtypes = [c, c, i, i, i, f, p, i, p, i, f, p, i]
        lib.dnnl_sgemm.restype = ctypes.c_int
        lib.omp_set_num_threads.argtypes = [ctypes.c_int]
        return lib
    return None


def openblas_products_ms(lib, cfg, steps, threads, onednn=None):
    """Milliseconds per step of the step's products as brain's plugin issues them (cpu_session.cpp): forward by
    rows, a weight gradient along its longer side, an input gradient by rows; one part per thread; median of five.
    With `onednn`, each call of 2^20 multiply-adds or more goes to oneDNN instead, as the plugin routes it."""
    b = cfg["batch"]
    widths = [cfg["inp"], *cfg["hidden"], cfg["out"]]
    layers = len(widths) - 1
    keep = []

    def buf(n):
        t = torch.randn(n)
        keep.append(t)
        return t.data_ptr()

    w = [buf(widths[l + 1] * widths[l]) for l in range(layers)]
    a = [buf(b * widths[l]) for l in range(layers)]
    d = [buf(b * widths[l + 1]) for l in range(layers)]
    z = [buf(b * widths[l + 1]) for l in range(layers)]
    dw = [buf(widths[l + 1] * widths[l]) for l in range(layers)]
    dx = [buf(b * widths[l]) for l in range(layers)]

    def part(total, index, align=1):
        chunk = -(-total // threads)
        chunk = -(-chunk // align) * align
        lo = min(total, chunk * index)
        return lo, min(total, lo + chunk)

    def calls(index):
        out = []
        r0, r1 = part(b, index)
        for l in range(layers):
            n_in, n_out = widths[l], widths[l + 1]
            if r1 > r0:
                out.append((ROW_MAJOR, NO_TRANS, TRANS, r1 - r0, n_out, n_in, 1.0, a[l] + 4 * r0 * n_in, n_in,
                            w[l], n_in, 0.0, z[l] + 4 * r0 * n_out, n_out))
        for l in reversed(range(layers)):
            n_in, n_out = widths[l], widths[l + 1]
            if n_out >= n_in:
                o0, o1 = part(n_out, index)
                if o1 > o0:
                    out.append((ROW_MAJOR, TRANS, NO_TRANS, o1 - o0, n_in, b, 1.0, d[l] + 4 * o0, n_out, a[l], n_in,
                                0.0, dw[l] + 4 * o0 * n_in, n_in))
            else:
                c0, c1 = part(n_in, index, 16)
                if c1 > c0:
                    out.append((ROW_MAJOR, TRANS, NO_TRANS, n_out, c1 - c0, b, 1.0, d[l], n_out, a[l] + 4 * c0, n_in,
                                0.0, dw[l] + 4 * c0, n_in))
            if l > 0 and r1 > r0:
                out.append((ROW_MAJOR, NO_TRANS, NO_TRANS, r1 - r0, n_in, n_out, 1.0, d[l] + 4 * r0 * n_out, n_out,
                            w[l], n_in, 0.0, dx[l] + 4 * r0 * n_in, n_in))
        return out

    plans = [calls(t) for t in range(threads)]

    def route(c):
        _, ta, tb, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc = c
        if onednn is None or m * n * k < ONEDNN_MIN_MACS:
            return lib.cblas_sgemm, c
        return onednn.dnnl_sgemm, (b"T" if ta == TRANS else b"N", b"T" if tb == TRANS else b"N", m, n, k, alpha, pa,
                                   lda, pb, ldb, beta, pc, ldc)

    plans = [[route(c) for c in plan] for plan in plans]

    def run(plan, count):
        if onednn is not None:
            onednn.omp_set_num_threads(1)  # this thread's own setting: one product, one thread
        for _ in range(count):
            for fn, c in plan:
                fn(*c)

    def timed():
        workers = [threading.Thread(target=run, args=(plans[t], steps)) for t in range(threads)]
        t0 = time.perf_counter()
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        return (time.perf_counter() - t0) / steps * 1e3

    return warm_median(timed)


def main():
    argv, points, seed, work = grid_options(sys.argv)
    name = argv[1]
    threads = int(argv[2]) if len(argv) > 2 else 2
    rounds = int(argv[3]) if len(argv) > 3 else 3
    cfg = resolve([name], points, seed, work)[name]
    torch.set_num_threads(threads)
    steps = cfg["n"] // cfg["batch"]
    lib = load_openblas()
    dnnl = load_onednn() if lib else None
    rows = []
    for r in range(rounds):
        _, samples_per_s, _ = train(cfg, "cpu", "eager")
        step = cfg["batch"] / samples_per_s * 1e3
        time.sleep(0.5)  # the OpenMP threads' spin after the last parallel region ends
        gemm = products_ms(cfg, steps)
        time.sleep(0.5)
        blas = openblas_products_ms(lib, cfg, steps, threads) if lib else float("nan")
        routed = openblas_products_ms(lib, cfg, steps, threads, dnnl) if dnnl else float("nan")
        rows.append((step, gemm, blas, routed))
        print(json.dumps(dict(cfg=name, round=r, threads=threads, torch_step_ms=round(step, 4),
                              torch_products_ms=round(gemm, 4), share=round(gemm / step, 4),
                              openblas_products_ms=round(blas, 4), plugin_products_ms=round(routed, 4))), flush=True)
    step = statistics.median(x[0] for x in rows)
    gemm = statistics.median(x[1] for x in rows)
    blas = statistics.median(x[2] for x in rows)
    routed = statistics.median(x[3] for x in rows)
    print(json.dumps(dict(cfg=name, rounds=rounds, threads=threads, torch=torch.__version__,
                          median_torch_step_ms=round(step, 4), median_torch_products_ms=round(gemm, 4),
                          share=round(gemm / step, 4), median_openblas_products_ms=round(blas, 4),
                          median_plugin_products_ms=round(routed, 4), step_ms_for_1_5x=round(step / 1.5, 4))),
          flush=True)


if __name__ == "__main__":
    main()

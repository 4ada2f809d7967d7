// Single-thread sgemm rates of OpenBLAS, oneDNN and (where installed) BLIS on the row slices of dense training's
// products: per batch slice of M rows and layer width W, the forward product (M x W from W inputs, x W^T), the
// delta (M x W, W deep) and the weight gradient (W x W, M deep), as the CPU plugin issues them (row-major). Prints
// GFLOP/s of each and oneDNN / OpenBLAS. Libraries are opened at run time, as the plugin does; OpenBLAS gets the
// kernel family the plugin would choose (OPENBLAS_CORETYPE, where the environment does not set it) and BLIS its
// AVX-512 kernels on AVX-512 CPUs it does not recognise (BLIS_ARCH_TYPE).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace {

enum { RowMajor = 101, NoTrans = 111, Trans = 112 };
using Cblas = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                       int);
using Onednn = int (*)(char, char, long, long, long, float, const float*, long, const float*, long, float, float*,
                       long);

Onednn g_onednn = nullptr;
void onednn(int, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
            float beta, float* c, int ldc) {
    g_onednn(ta == Trans ? 'T' : 'N', tb == Trans ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Best of five timings of enough calls for about 0.1 GFLOP each, in GFLOP/s.
double rate(Cblas f, int ta, int tb, int m, int n, int k) {
    std::vector<float> a(static_cast<std::size_t>(m) * k, 0.01f), b(static_cast<std::size_t>(k) * n, 0.02f),
        c(static_cast<std::size_t>(m) * n);
    const int lda = ta == NoTrans ? k : m, ldb = tb == NoTrans ? n : k;
    const double flop = 2.0 * m * n * k;
    const int reps = std::max(20, static_cast<int>(1e8 / flop));
    f(RowMajor, ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), n);
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i)
            f(RowMajor, ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), n);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps);
    }
    return flop / best / 1e9;
}

} // namespace

int main() {
    void* openblas = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    void* dnnl = dlopen("libdnnl.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!dnnl) dnnl = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    void* blis = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!openblas || !dnnl) {
        std::fprintf(stderr, "cpu-gemm-libraries: needs libopenblas.so.0 and libdnnl (apt install libopenblas-dev "
                             "libdnnl-dev)\n");
        return 2;
    }
    reinterpret_cast<void (*)(int)>(dlsym(openblas, "openblas_set_num_threads"))(1);
    reinterpret_cast<void (*)(int)>(dlsym(dnnl, "omp_set_num_threads"))(1);
    if (blis) reinterpret_cast<void (*)(long)>(dlsym(blis, "bli_thread_set_num_threads"))(1);
    g_onednn = reinterpret_cast<Onednn>(dlsym(dnnl, "dnnl_sgemm"));
    const auto core = reinterpret_cast<char* (*)()>(dlsym(openblas, "openblas_get_corename"));
    std::printf("OpenBLAS kernels %s; oneDNN sgemm%s\n", core(), blis ? "; BLIS 0.9 (libblis.so.4)" : "");
    const Cblas ob = reinterpret_cast<Cblas>(dlsym(openblas, "cblas_sgemm"));
    const Cblas bl = blis ? reinterpret_cast<Cblas>(dlsym(blis, "cblas_sgemm")) : nullptr;
    std::printf("%-22s %10s %10s %10s %8s%s\n", "product (M x N, K)", "macs", "OpenBLAS", "oneDNN", "ratio",
                bl ? "       BLIS    ratio" : "");
    for (const int m : {8, 16, 32, 64, 128})
        for (const int w : {32, 64, 96, 128, 192, 256, 384, 600})
            for (int kind = 0; kind < 3; ++kind) {
                // forward: (m x w) = x (m x w deep) W^T; delta: (m x w) = d W; weight gradient: (w x w) = d^T x.
                const int ta = kind == 2 ? Trans : NoTrans, tb = kind == 0 ? Trans : NoTrans;
                const int rows = kind == 2 ? w : m, depth = kind == 2 ? m : w;
                const double o = rate(ob, ta, tb, rows, w, depth), d = rate(onednn, ta, tb, rows, w, depth);
                char name[64];
                std::snprintf(name, sizeof name, "%s %dx%d, %d",
                              kind == 0   ? "fwd  "
                              : kind == 1 ? "delta"
                                          : "wgrad",
                              rows, w, depth);
                std::printf("%-22s %10ld %10.1f %10.1f %7.2fx", name, static_cast<long>(rows) * w * depth, o, d,
                            d / o);
                if (bl) {
                    const double b = rate(bl, ta, tb, rows, w, depth);
                    std::printf(" %10.1f %7.2fx", b, b / o);
                }
                std::printf("\n");
            }
}

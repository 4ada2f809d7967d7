// brain::cpu::OnednnLibrary: oneDNN's sgemm, which takes the CPU plugin's larger products where it is installed.
#pragma once

#include <cstdint>
#include <string>

namespace brain::cpu {

// oneDNN (libdnnl), opened with dlopen and optional: without it OpenBLAS takes every product. Its C API's two
// entry points used here are the same in oneDNN 2 and 3, so they are declared here instead of taken from dnnl.h,
// which the build would otherwise need.
struct OnednnLibrary {
    using Sgemm = int (*)(char, char, std::int64_t, std::int64_t, std::int64_t, float, const float*, std::int64_t,
                          const float*, std::int64_t, float, float*, std::int64_t);
    Sgemm sgemm = nullptr;                  // dnnl_sgemm; null when oneDNN is not used
    int (*get_max_threads)() = nullptr;     // its OpenMP runtime's omp_get_max_threads
    void (*set_num_threads)(int) = nullptr; // and omp_set_num_threads: each product runs on its caller alone
    std::string path;                       // the file that was loaded
    std::string version;                    // "oneDNN 2.6.3"
    std::string unavailable;                // why oneDNN is not used, when sgemm is null
    bool block_signals = false;             // whether a call must hold off asynchronous signals (see gemm)

    bool available() const noexcept { return sgemm != nullptr; }
    // C = op(A) op(B), row-major, on the calling thread alone; returns dnnl_sgemm's status (0: success).
    int gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
             float* c, int ldc) const noexcept;
};

// Load oneDNN once (thread-safe). Never throws: a missing or unusable library leaves `unavailable` set.
const OnednnLibrary& onednn();

// Blocks, for the rest of the calling thread's life, the signals a oneDNN product holds off, so that its products
// skip the two system calls each: for the plugin's own worker threads, which handle no signal (the application's
// threads take them).
void defer_signals_on_this_thread() noexcept;

} // namespace brain::cpu

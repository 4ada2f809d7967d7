// brain::cpu::Gemm: the CPU plugin's float32 matrix products, each on its calling thread, by OpenBLAS or oneDNN.
#pragma once

#include "blas_library.hpp"
#include "onednn_library.hpp"

#include <atomic>
#include <cstdint>
#include <string>

namespace brain::cpu {

// Which library takes the products (BRAIN_CPU_GEMM): by size, OpenBLAS alone, or oneDNN alone.
enum class GemmChoice { Auto, OpenBlas, Onednn };

// From how many multiply-adds a product goes to oneDNN under GemmChoice::Auto: below it OpenBLAS's smaller
// per-call cost wins, above it oneDNN's kernels (docs/performance.md, "CPU products").
inline constexpr std::int64_t k_onednn_min_macs = std::int64_t{1} << 20;

// BRAIN_CPU_GEMM (auto, openblas or onednn; unset: auto); throws sdk::Failure naming a bad value.
GemmChoice gemm_choice();

// One line for logs: which library takes which products, and why oneDNN does not where it does not.
std::string gemm_summary();

// The products of one session or predictor. Copyable state is resolved once; calls are thread-safe.
class Gemm {
public:
    // Loads the libraries and reads BRAIN_CPU_GEMM; throws sdk::Failure for a bad value or for `onednn` when
    // oneDNN is unavailable (naming why).
    Gemm();
    Gemm(const Gemm&) = delete;
    Gemm& operator=(const Gemm&) = delete;

    // c (m x n, row-major, leading dimension ldc) = op(a) op(b), op(x) = x^T where asked. Never throws: a
    // failure of oneDNN is kept for check().
    void operator()(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda, const float* b,
                    int ldb, float* c, int ldc) const noexcept;
    // Throws sdk::Failure(GEMM_FAILED) once any product has failed (the results are then not to be used).
    void check() const;
    // What stats() reports as the arithmetic, by the libraries that have run a product: "float32 (OpenBLAS)",
    // "float32 (oneDNN)" or "float32 (OpenBLAS and oneDNN)".
    const char* arithmetic() const noexcept;

private:
    decltype(BlasLibrary::sgemm) m_openblas = nullptr;
    const OnednnLibrary* m_onednn = nullptr; // null: OpenBLAS takes every product
    std::int64_t m_min_macs = 0;             // oneDNN from this many multiply-adds
    mutable std::atomic<bool> m_ran_openblas{false};
    mutable std::atomic<bool> m_ran_onednn{false};
    mutable std::atomic<int> m_failed_status{0};
    mutable std::atomic<std::int64_t> m_failed_shape[3] = {};
};

} // namespace brain::cpu

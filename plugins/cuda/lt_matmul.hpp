// brain::cuda::LtMatmul: one cuBLASLt matrix product, described and given its algorithm once (at set-up, outside
// any graph capture) and then run as often as needed, graph capture included. The mixed-precision training path
// and the predictor use it: bf16 operands on the tensor cores with float32 accumulation, and epilogues that add the
// bias, apply ReLU or sum the bias gradient inside the product.
#pragma once

#include "cuda_errors.hpp"
#include "cuda_handles.hpp"

#include <cstddef>
#include <cstdint>
#include <cublasLt.h>
#include <optional>
#include <vector>

namespace brain::cuda {

using LtHandle = UniqueHandle<cublasLtHandle_t, cublasLtDestroy>;

// A cuBLASLt handle.
LtHandle create_cublas_lt();

// A column-major matrix as cuBLASLt sees it: its storage (before any transpose) and element type.
struct LtMatrix {
    const void* pointer = nullptr;
    cudaDataType_t type = CUDA_R_32F;
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;
    std::int64_t ld = 0;
};

// What the product does besides D = op(A) op(B).
enum class LtEpilogue {
    None,
    Bias,     // D += bias (one value per row of D), bias of D's type
    ReluBias, // D = max(D + bias, 0)
    BiasGradB // the sum of op(B) over k (one value per column of D) into bias_or_grad, of C's type
};

// The product's description: matrices, operations, compute type and epilogue.
struct LtProduct {
    cublasOperation_t transa = CUBLAS_OP_N;
    cublasOperation_t transb = CUBLAS_OP_N;
    LtMatrix a, b, d;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    LtEpilogue epilogue = LtEpilogue::None;
    const void* bias_or_grad = nullptr; // the epilogue's vector
};

// One planned product. Move-only; empty when default-constructed.
class LtMatmul {
public:
    LtMatmul() = default;
    // The product with the algorithm cuBLASLt's heuristics rank first for it, given the operands' real alignment
    // and at most `workspace_bytes` of workspace; nullopt when cuBLASLt has none (an epilogue it does not offer for
    // these types), so that the caller can choose another form. GEMM_FAILED for any other failure.
    // `candidates` > 1 keeps that many of the heuristics' algorithms for tune().
    static std::optional<LtMatmul> plan(cublasLtHandle_t handle, const LtProduct& product,
                                        std::uint64_t workspace_bytes, int candidates = 1);
    // The same product (its epilogue must be None) through cublasGemmEx, whose kernels take any leading dimension
    // and alignment: for a product cuBLASLt has no algorithm for. run() then needs a cuBLAS handle bound to the
    // stream, with host pointer mode.
    static LtMatmul through_cublas(const LtProduct& product);
    // Enqueue the product on `stream` (alpha 1, beta 0); `cublas` is used only by a through_cublas product.
    // GEMM_FAILED naming `what` on failure.
    void run(cublasLtHandle_t handle, cublasHandle_t cublas, cudaStream_t stream, void* workspace,
             std::uint64_t workspace_bytes, const char* what) const;
    // Whether run() needs the cuBLAS handle.
    bool uses_cublas() const noexcept { return m_cublas; }
    // Time each algorithm the heuristics offered (up to plan's `candidates`) on the planned operands, synchronously
    // on `stream` and outside any capture (D is overwritten), and keep the fastest. For products run many times in
    // one shape, where the heuristics' first choice is not always the fastest kernel. Returns the chosen
    // candidate's index (0: the heuristics' first) and its time and the first's, in microseconds.
    struct Tuning {
        std::size_t chosen = 0;
        std::size_t offered = 1;
        float chosen_us = 0.0f;
        float first_us = 0.0f;
    };
    Tuning tune(cublasLtHandle_t handle, cudaStream_t stream, void* workspace, std::uint64_t workspace_bytes);
    // Adopt another plan's chosen algorithm when both offer the same candidates (the same shape and alignment).
    bool adopt_choice(const LtMatmul& tuned) noexcept;

private:
    using Desc = UniqueHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
    using Layout = UniqueHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;

    Desc m_desc;
    Layout m_a, m_b, m_d;
    cublasLtMatmulAlgo_t m_algo{};
    std::vector<cublasLtMatmulAlgo_t> m_candidates; // the heuristics' ranking, when more than one was asked for
    const void* m_pa = nullptr;
    const void* m_pb = nullptr;
    void* m_pd = nullptr;
    bool m_cublas = false; // through_cublas: cublasGemmEx with the product below
    LtProduct m_product;
};

} // namespace brain::cuda

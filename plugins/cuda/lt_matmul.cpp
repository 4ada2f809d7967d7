#include "lt_matmul.hpp"

#include "test_hooks.hpp"

#include <algorithm>
#include <cstring>

namespace brain::cuda {

namespace {

// cuBLASLt's heuristics assume 256-byte aligned operands unless told otherwise, and may then choose kernels that
// need it: each operand's real alignment is passed on.
std::uint32_t alignment_of(const void* pointer) noexcept {
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    if (address == 0) return 256;
    return static_cast<std::uint32_t>(std::min<std::uintptr_t>(256, address & (~address + 1)));
}

template <class T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
    check_cublas(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value),
                 "cublasLtMatmulDescSetAttribute");
}

template <class T>
void set(cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute, const T& value) {
    check_cublas(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value),
                 "cublasLtMatmulPreferenceSetAttribute");
}

} // namespace

LtHandle create_cublas_lt() {
    cublasLtHandle_t handle = nullptr;
    check_cublas(cublasLtCreate(&handle), "cublasLtCreate");
    return LtHandle(handle);
}

std::optional<LtMatmul> LtMatmul::plan(cublasLtHandle_t handle, const LtProduct& product,
                                       std::uint64_t workspace_bytes, int candidates) {
    LtMatmul matmul;
    cublasLtMatmulDesc_t desc = nullptr;
    check_cublas(cublasLtMatmulDescCreate(&desc, product.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    matmul.m_desc = Desc(desc);
    set(desc, CUBLASLT_MATMUL_DESC_TRANSA, product.transa);
    set(desc, CUBLASLT_MATMUL_DESC_TRANSB, product.transb);
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    switch (product.epilogue) {
    case LtEpilogue::None:
        break;
    case LtEpilogue::Bias:
        epilogue = CUBLASLT_EPILOGUE_BIAS;
        break;
    case LtEpilogue::ReluBias:
        epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
        break;
    case LtEpilogue::BiasGradB:
        epilogue = CUBLASLT_EPILOGUE_BGRADB;
        break;
    }
    set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    if (product.epilogue != LtEpilogue::None) set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, product.bias_or_grad);

    const auto layout = [](const LtMatrix& m) {
        cublasLtMatrixLayout_t created = nullptr;
        check_cublas(cublasLtMatrixLayoutCreate(&created, m.type, m.rows, m.cols, m.ld),
                     "cublasLtMatrixLayoutCreate");
        return Layout(created);
    };
    matmul.m_a = layout(product.a);
    matmul.m_b = layout(product.b);
    matmul.m_d = layout(product.d);
    matmul.m_pa = product.a.pointer;
    matmul.m_pb = product.b.pointer;
    matmul.m_pd = const_cast<void*>(product.d.pointer);

    cublasLtMatmulPreference_t preference = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    const UniqueHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> owned(preference);
    set(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace_bytes);
    set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(product.a.pointer));
    set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(product.b.pointer));
    set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_of(product.d.pointer));
    set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(product.d.pointer));

    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(std::max(1, candidates)));
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle, desc, matmul.m_a.get(), matmul.m_b.get(), matmul.m_d.get(), matmul.m_d.get(), preference,
        static_cast<int>(results.size()), results.data(), &found);
    // NOT_SUPPORTED (or no result) is cuBLASLt's answer for a combination it has no kernel for.
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0))
        return std::nullopt;
    check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");
    matmul.m_algo = results[0].algo;
    if (found > 1)
        for (int i = 0; i < found; ++i)
            if (results[static_cast<std::size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
                matmul.m_candidates.push_back(results[static_cast<std::size_t>(i)].algo);
    return matmul;
}

LtMatmul LtMatmul::through_cublas(const LtProduct& product) {
    if (product.epilogue != LtEpilogue::None)
        fail(BRAIN_ERR_GEMM_FAILED, "a product with an epilogue cannot go through cublasGemmEx");
    LtMatmul matmul;
    matmul.m_cublas = true;
    matmul.m_product = product;
    return matmul;
}

void LtMatmul::run(cublasLtHandle_t handle, cublasHandle_t cublas, cudaStream_t stream, void* workspace,
                   std::uint64_t workspace_bytes, const char* what) const {
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t status = CUBLAS_STATUS_EXECUTION_FAILED;
    if (inject_fault(Fault::Gemm)) {
        // as if the product failed
    } else if (m_cublas) {
        // The stored matrices: op(A) is m x k, op(B) k x n, D m x n (column-major).
        const LtProduct& p = m_product;
        const auto m = static_cast<int>(p.transa == CUBLAS_OP_N ? p.a.rows : p.a.cols);
        const auto k = static_cast<int>(p.transa == CUBLAS_OP_N ? p.a.cols : p.a.rows);
        const auto n = static_cast<int>(p.d.cols);
        status =
            cublasGemmEx(cublas, p.transa, p.transb, m, n, k, &one, p.a.pointer, p.a.type, static_cast<int>(p.a.ld),
                         p.b.pointer, p.b.type, static_cast<int>(p.b.ld), &zero, const_cast<void*>(p.d.pointer),
                         p.d.type, static_cast<int>(p.d.ld), p.compute, CUBLAS_GEMM_DEFAULT);
    } else {
        status = cublasLtMatmul(handle, m_desc.get(), &one, m_pa, m_a.get(), m_pb, m_b.get(), &zero, m_pd,
                                m_d.get(), m_pd, m_d.get(), &m_algo, workspace, workspace_bytes, stream);
    }
    check_cublas(status, what);
}

LtMatmul::Tuning LtMatmul::tune(cublasLtHandle_t handle, cudaStream_t stream, void* workspace,
                                std::uint64_t workspace_bytes) {
    Tuning tuning;
    if (m_cublas || m_candidates.size() < 2) return tuning;
    tuning.offered = m_candidates.size();
    const Event start = create_timing_event(), stop = create_timing_event();
    const float one = 1.0f, zero = 0.0f;
    // One untimed run (a kernel's first launch loads its module), then the best of two: a candidate's time is its
    // kernel's, not the first launch's.
    const auto time_us = [&](const cublasLtMatmulAlgo_t& algo) -> float {
        float best = -1.0f;
        for (int run = 0; run < 3; ++run) {
            check_cuda(cudaEventRecord(start.get(), stream), "cudaEventRecord");
            const cublasStatus_t status =
                cublasLtMatmul(handle, m_desc.get(), &one, m_pa, m_a.get(), m_pb, m_b.get(), &zero, m_pd, m_d.get(),
                               m_pd, m_d.get(), &algo, workspace, workspace_bytes, stream);
            // A candidate the heuristics offered but that cannot run here is skipped, not fatal.
            if (status != CUBLAS_STATUS_SUCCESS) return -1.0f;
            check_cuda(cudaEventRecord(stop.get(), stream), "cudaEventRecord");
            check_cuda(cudaEventSynchronize(stop.get()), "timing a matrix product");
            float ms = 0.0f;
            check_cuda(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
            if (run > 0 && (best < 0.0f || ms < best)) best = ms;
        }
        return best * 1000.0f;
    };
    for (std::size_t i = 0; i < m_candidates.size(); ++i) {
        const float us = time_us(m_candidates[i]);
        if (i == 0) tuning.first_us = tuning.chosen_us = us;
        if (us >= 0.0f && (tuning.chosen_us < 0.0f || us < tuning.chosen_us)) {
            tuning.chosen = i;
            tuning.chosen_us = us;
        }
    }
    m_algo = m_candidates[tuning.chosen];
    return tuning;
}

bool LtMatmul::adopt_choice(const LtMatmul& tuned) noexcept {
    if (m_candidates.size() != tuned.m_candidates.size()) return false;
    for (std::size_t i = 0; i < m_candidates.size(); ++i)
        if (std::memcmp(&m_candidates[i], &tuned.m_candidates[i], sizeof(cublasLtMatmulAlgo_t)) != 0) return false;
    m_algo = tuned.m_algo;
    return true;
}

} // namespace brain::cuda

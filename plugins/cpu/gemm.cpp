#include "gemm.hpp"

#include <brain/plugin_sdk.hpp>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace brain::cpu {

namespace {

// BRAIN_CPU_GEMM's value and its choice; no choice for a value that names none.
struct ChoiceSetting {
    std::string_view value;
    std::optional<GemmChoice> choice;
};

ChoiceSetting read_choice() {
    const char* text = std::getenv("BRAIN_CPU_GEMM");
    const std::string_view value = text ? text : "";
    if (value.empty() || value == "auto") return {value, GemmChoice::Auto};
    if (value == "openblas") return {value, GemmChoice::OpenBlas};
    if (value == "onednn") return {value, GemmChoice::Onednn};
    return {value, std::nullopt};
}

} // namespace

GemmChoice gemm_choice() {
    const ChoiceSetting setting = read_choice();
    if (!setting.choice)
        throw sdk::Failure(BRAIN_ERR_INVALID_ARGUMENT, "BRAIN_CPU_GEMM must be auto, openblas or onednn; got '" +
                                                           std::string(setting.value) + "': fix or unset it");
    return *setting.choice;
}

std::string gemm_summary() {
    // A bad value is reported where a session opens; the summary describes the default then.
    const GemmChoice choice = read_choice().choice.value_or(GemmChoice::Auto);
    if (choice == GemmChoice::OpenBlas) return "products by OpenBLAS (BRAIN_CPU_GEMM=openblas)";
    const OnednnLibrary& dnnl = onednn();
    if (!dnnl.available()) return "products by OpenBLAS; oneDNN not used: " + dnnl.unavailable;
    if (choice == GemmChoice::Onednn)
        return "products by " + dnnl.version + " from " + dnnl.path + " (BRAIN_CPU_GEMM=onednn)";
    return "products by OpenBLAS below " + std::to_string(k_onednn_min_macs) + " multiply-adds, by " +
           dnnl.version + " from " + dnnl.path + " from there";
}

Gemm::Gemm() : m_openblas(blas().sgemm) {
    const GemmChoice choice = gemm_choice();
    if (choice == GemmChoice::OpenBlas) return;
    const OnednnLibrary& dnnl = onednn();
    if (!dnnl.available()) {
        if (choice == GemmChoice::Onednn)
            throw sdk::Failure(BRAIN_ERR_PLUGIN_LOAD_FAILED,
                               "BRAIN_CPU_GEMM=onednn asks for oneDNN's products, but " + dnnl.unavailable +
                                   "; install it or unset BRAIN_CPU_GEMM");
        return;
    }
    m_onednn = &dnnl;
    m_min_macs = choice == GemmChoice::Onednn ? 0 : k_onednn_min_macs;
}

void Gemm::operator()(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda, const float* b,
                      int ldb, float* c, int ldc) const noexcept {
    const std::int64_t macs = std::int64_t{m} * n * k;
    if (!m_onednn || macs < m_min_macs) {
        // Read before written: a store on every call would bounce the flag's cache line between the threads.
        if (!m_ran_openblas.load(std::memory_order_relaxed)) m_ran_openblas.store(true, std::memory_order_relaxed);
        m_openblas(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k,
                   1.0f, a, lda, b, ldb, 0.0f, c, ldc);
        return;
    }
    if (!m_ran_onednn.load(std::memory_order_relaxed)) m_ran_onednn.store(true, std::memory_order_relaxed);
    const int status = m_onednn->gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
    if (status != 0) {
        int expected = 0;
        if (m_failed_status.compare_exchange_strong(expected, status)) {
            m_failed_shape[0] = m;
            m_failed_shape[1] = n;
            m_failed_shape[2] = k;
        }
    }
}

void Gemm::check() const {
    const int status = m_failed_status.load();
    if (status == 0) return;
    throw sdk::Failure(BRAIN_ERR_GEMM_FAILED,
                       "oneDNN's sgemm failed (dnnl_status_t " + std::to_string(status) + ") on a " +
                           std::to_string(m_failed_shape[0].load()) + " x " +
                           std::to_string(m_failed_shape[1].load()) + " x " +
                           std::to_string(m_failed_shape[2].load()) +
                           " product; set BRAIN_CPU_GEMM=openblas to train on OpenBLAS alone");
}

const char* Gemm::arithmetic() const noexcept {
    if (!m_ran_onednn.load(std::memory_order_relaxed)) return "float32 (OpenBLAS)";
    return m_ran_openblas.load(std::memory_order_relaxed) ? "float32 (OpenBLAS and oneDNN)" : "float32 (oneDNN)";
}

} // namespace brain::cpu

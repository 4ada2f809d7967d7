// brain::cuda::CudaSession: one training session on one GPU. Everything it needs is planned against the budget
// before anything is allocated; the parameters, gradients, optimizer state and (when it fits) the data set stay
// on the device; an epoch is a fixed launch sequence (captured once as a CUDA graph and replayed) whose only
// transfer back is the epoch's mean loss.
#pragma once

#include "cuda_handles.hpp"
#include "device_allocator.hpp"
#include "device_scalars.h"
#include "kernel_module.hpp"

#include <brain/plugin_abi.h>
#include <brain/session_plan.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace brain::cuda {

using sdk::LayerPlan;

// The shared validated plan (brain/session_plan.hpp) plus the CUDA backend's memory plan.
struct SessionPlan : sdk::SessionPlan {
    // Tensor bytes (charged as the allocator charges them) for batches of `batch_rows` rows: parameters,
    // gradients, optimizer state, the scalar block, the batch's inputs and targets, and per layer z, a (not for
    // linear layers, whose a is z) and delta.
    std::uint64_t tensor_bytes(std::size_t batch_rows) const noexcept;
    // Workspace the kernels need besides cuBLAS's: the per-row losses of a batch.
    std::uint64_t scratch_bytes(std::size_t batch_rows) const noexcept;
    // Device bytes of the resident data set: features, targets and the epoch's permutation.
    std::uint64_t dataset_bytes() const noexcept;
};

// Validate a descriptor; INVALID_ARGUMENT naming the value at fault.
SessionPlan make_session_plan(const brain_session_desc& desc);

// A CUDA training session. Not thread-safe (the ABI serialises calls on one session).
class CudaSession {
public:
    explicit CudaSession(const brain_session_desc& desc);
    ~CudaSession();
    CudaSession(const CudaSession&) = delete;
    CudaSession& operator=(const CudaSession&) = delete;

    // One epoch; returns the sample-weighted mean loss, the only value read back. NUMERICAL on NaN/inf.
    float train_epoch();
    // Use `learning_rate` from the next optimizer step on (the captured epoch graph is re-captured).
    void set_learning_rate(float learning_rate);
    // Copy parameters, optimizer state and the step count to the host (the only copy of the weights back).
    void checkpoint(float* parameters, std::uint64_t parameter_count, float* optimizer_state,
                    std::uint64_t optimizer_state_count, std::uint64_t* out_step);
    // Measured figures of this session.
    brain_session_stats stats() const noexcept;

private:
    void require_usable(const char* operation) const;
    void allocate_and_upload(const brain_session_desc& desc, bool resident, std::uint64_t cublas_workspace);
    void enqueue_resident_epoch();
    void run_staged_epoch();
    void enqueue_batch(const float* x, const float* t, unsigned rows, int batch);
    void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* a, int lda,
              const float* b, int ldb, float* c, int ldc, const char* what);
    unsigned elementwise_blocks(std::uint64_t count) const noexcept;
    [[noreturn]] void fail_numerical(float loss);
    bool choose_fused_epoch();
    // The fused kernel's arguments; `spare_bytes` of the budget are left for its optional workspace.
    void prepare_fused_epoch(std::uint64_t spare_bytes);
    void launch_fused_epoch();
    void log_fused_profile(double host_us);
    std::size_t batch_count() const noexcept;

    SessionPlan m_plan;
    int m_device = 0;
    int m_sm_count = 1;
    const KernelModule* m_kernels = nullptr;
    DeviceAllocator m_allocator;
    std::optional<Stream> m_stream; // created only once the budget check has passed
    std::optional<CublasHandle> m_cublas;
    cublasComputeType_t m_compute = CUBLAS_COMPUTE_32F;
    DeviceBuffer m_params, m_grads, m_state, m_scalars;
    DeviceBuffer m_x, m_t; // the batch's inputs and targets (gathered or staged)
    std::vector<DeviceBuffer> m_z, m_a, m_delta;
    DeviceBuffer m_row_loss, m_workspace;               // kernel scratch and the cuBLAS workspace
    DeviceBuffer m_features, m_targets, m_perm;         // the resident data set
    std::vector<float> m_host_features, m_host_targets; // the staged data set
    PinnedBuffer m_result;                              // the 4-byte read-back of the epoch's loss
    PinnedBuffer m_stage[2];                            // double-buffered staging of batches
    std::vector<Event> m_stage_done;
    GraphExec m_graph;
    bool m_resident = false;
    bool m_fused = false;      // epochs run as one cooperative launch of the fused epoch kernel
    unsigned m_fused_grid = 0; // its blocks: one per SM
    brain_fused_epoch_args m_fused_args{};
    DeviceBuffer m_fused_profile; // BRAIN_CUDA_FUSED_PROFILE only
    DeviceBuffer m_fused_head;    // the blocks' shares of a narrow head's gradient (brain_fused_epoch_args)
    bool m_use_graphs = true;
    std::uint64_t m_first_epoch = 0;
    std::uint64_t m_epochs = 0;
    std::uint64_t m_batches = 0;
    std::uint64_t m_host_to_device = 0;
    std::uint64_t m_device_to_host = 0;
    std::chrono::nanoseconds m_setup_time{0};
    std::chrono::nanoseconds m_training_time{0};
    std::chrono::nanoseconds m_checkpoint_time{0};
    std::string m_failure; // why the session became unusable; empty while usable
};

} // namespace brain::cuda

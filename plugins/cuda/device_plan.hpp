// brain::cuda::DevicePlan: a validated session descriptor (sdk::SessionPlan) with the device memory it needs, and
// how that memory fits the budget. Computed from the descriptor alone, before any CUDA call.
#pragma once

#include <brain/plugin_abi.h>
#include <brain/session_plan.hpp>
#include <cstddef>
#include <cstdint>

namespace brain::cuda {

using sdk::LayerPlan;

// The shared validated plan plus the CUDA backend's byte counts, as the allocator charges them.
struct DevicePlan : sdk::SessionPlan {
    // Tensor bytes for batches of `batch_rows` rows: parameters, gradients, optimizer state, the scalar block, the
    // batch's inputs and targets, and per layer z, a (not for linear layers, whose a is z) and delta.
    std::uint64_t tensor_bytes(std::size_t batch_rows) const noexcept;
    // Workspace the kernels need besides cuBLAS's: the per-row losses of a batch and the learning rate of each of
    // an epoch's steps (batches of `batch_rows` rows).
    std::uint64_t scratch_bytes(std::size_t batch_rows) const noexcept;
    // Device bytes of the resident data set: features, targets and the epoch's permutation.
    std::uint64_t dataset_bytes() const noexcept;
    // Batches an epoch has.
    std::size_t batch_count() const noexcept;
};

// Validate a descriptor; INVALID_ARGUMENT naming the value at fault.
DevicePlan make_device_plan(const brain_session_desc& desc);

// How a session's memory fits its budget.
struct MemoryLayout {
    bool resident = false;              // the data set lives on the device (else it is staged batch by batch)
    std::uint64_t cublas_workspace = 0; // bytes for cuBLAS's workspace, when the session uses cuBLAS
    std::uint64_t spare = 0;            // what the budget leaves past the tensors, scratch and resident data set
};

// The tensors and scratch must fit (BUDGET_EXCEEDED otherwise, naming the largest batch size that fits); then the
// data set is resident if it fits in what is left, and the cuBLAS workspace takes the largest of 32, 4 or 1 MiB
// that fits after it (none if none does).
MemoryLayout plan_memory(const DevicePlan& plan);

} // namespace brain::cuda

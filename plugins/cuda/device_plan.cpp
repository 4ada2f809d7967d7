#include "device_plan.hpp"

#include "cuda_errors.hpp"
#include "device_allocator.hpp"
#include "device_scalars.h"

#include <limits>
#include <string>

namespace brain::cuda {

std::uint64_t DevicePlan::tensor_bytes(std::size_t b) const noexcept {
    std::uint64_t total = 2 * charged_bytes(4ull * parameter_count) + charged_bytes(4ull * state_count) +
                          charged_bytes(sizeof(brain_cuda_scalars)) + charged_bytes(4ull * b * input_width) +
                          charged_bytes(4ull * b * target_width);
    for (const LayerPlan& layer : layers) {
        const std::uint64_t buffer = charged_bytes(4ull * b * layer.outputs);
        total += (layer.activation == BRAIN_ACT_LINEAR ? 2 : 3) * buffer;
    }
    return total;
}

std::uint64_t DevicePlan::scratch_bytes(std::size_t b) const noexcept {
    const std::uint64_t steps = b == 0 ? 0 : (rows + b - 1) / b;
    return charged_bytes(4ull * b) + charged_bytes(4ull * steps);
}

std::uint64_t DevicePlan::dataset_bytes() const noexcept {
    std::uint64_t total = charged_bytes(4ull * rows * input_width) + charged_bytes(4ull * rows * target_width);
    if (config.shuffle) total += charged_bytes(4ull * rows);
    return total;
}

std::size_t DevicePlan::batch_count() const noexcept {
    return (rows + config.batch_size - 1) / config.batch_size;
}

DevicePlan make_device_plan(const brain_session_desc& desc) {
    DevicePlan plan{sdk::plan_session(desc)};
    // Row indices travel through 32-bit kernel arguments (the shuffle, gathers and staging).
    if (plan.rows > std::numeric_limits<uint32_t>::max())
        fail(BRAIN_ERR_INVALID_ARGUMENT, "the data set has " + std::to_string(plan.rows) +
                                             " rows; the CUDA backend supports at most " +
                                             std::to_string(std::numeric_limits<uint32_t>::max()));
    return plan;
}

MemoryLayout plan_memory(const DevicePlan& plan) {
    const std::uint64_t budget = plan.budget_bytes;
    const std::uint64_t needed = plan.tensor_bytes(plan.batch_rows) + plan.scratch_bytes(plan.batch_rows);
    if (budget != 0 && needed > budget) {
        const std::size_t lo = sdk::largest_batch_within(
            budget, plan.batch_rows, [&](std::size_t b) { return plan.tensor_bytes(b) + plan.scratch_bytes(b); });
        fail(BRAIN_ERR_BUDGET_EXCEEDED, "the CUDA session needs " + mib(needed) +
                                            " of device memory for batch size " + std::to_string(plan.batch_rows) +
                                            " (parameters, gradients, optimizer state and batch tensors) but "
                                            "the memory budget is " +
                                            mib(budget) + "; " +
                                            (lo > 0 ? "the largest batch size that fits is " + std::to_string(lo)
                                                    : "not even batch size 1 fits: raise the budget to at least " +
                                                          mib(plan.tensor_bytes(1) + plan.scratch_bytes(1))) +
                                            "; nothing was allocated");
    }
    MemoryLayout layout;
    layout.spare = budget == 0 ? std::numeric_limits<std::uint64_t>::max() : budget - needed;
    layout.resident = plan.dataset_bytes() <= layout.spare;
    if (layout.resident) layout.spare -= plan.dataset_bytes();
    // cuBLAS's recommended workspace on Hopper is 32 MiB; take less when the budget is tight, none if need be.
    for (std::uint64_t candidate : {32ull << 20, 4ull << 20, 1ull << 20})
        if (candidate <= layout.spare) {
            layout.cublas_workspace = candidate;
            break;
        }
    return layout;
}

} // namespace brain::cuda

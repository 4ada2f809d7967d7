#include "device_plan.hpp"

#include "cuda_errors.hpp"
#include "device_allocator.hpp"
#include "device_scalars.h"

#include <algorithm>
#include <limits>
#include <string>

namespace brain::cuda {

PaddedLayout padded_layout(const std::vector<LayerPlan>& layers) {
    const auto round_up = [](std::size_t n) {
        return (n + mixed_alignment - 1) / mixed_alignment * mixed_alignment;
    };
    PaddedLayout layout;
    for (const LayerPlan& layer : layers) {
        layout.weight_offset.push_back(layout.count);
        layout.count += round_up(layer.outputs * layer.inputs);
        layout.bias_offset.push_back(layout.count);
        layout.count += round_up(layer.outputs);
    }
    return layout;
}

std::size_t DevicePlan::device_state_count() const noexcept {
    return state_count == 0 ? 0 : device_parameter_count() * (state_count / parameter_count);
}

bool DevicePlan::keeps_pre_activations(std::size_t l) const noexcept {
    return layers[l].activation == BRAIN_ACT_GELU || layers[l].activation == BRAIN_ACT_LEAKY_RELU;
}

std::size_t DevicePlan::widest_layer() const noexcept {
    std::size_t widest = 0;
    for (const LayerPlan& layer : layers) widest = std::max(widest, layer.outputs);
    return widest;
}

std::uint64_t DevicePlan::tensor_bytes(std::size_t b) const noexcept {
    if (mixed()) {
        const std::uint64_t p = padded.count;
        std::uint64_t total = 2 * charged_bytes(4ull * p) + charged_bytes(4ull * device_state_count()) +
                              charged_bytes(2ull * p) + charged_bytes(sizeof(brain_cuda_scalars)) +
                              charged_bytes(2ull * b * input_width) + charged_bytes(4ull * b * target_width);
        for (std::size_t l = 0; l + 1 < layers.size(); ++l)
            total += (keeps_pre_activations(l) ? 2 : 1) * charged_bytes(2ull * b * layers[l].outputs);
        const LayerPlan& head = layers.back();
        total += (head.activation == BRAIN_ACT_LINEAR ? 2 : 3) * charged_bytes(4ull * b * head.outputs);
        return total + mixed_delta_buffers() * charged_bytes(2ull * b * widest_layer());
    }
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
    DevicePlan plan{sdk::plan_session(desc), {}};
    sdk::refuse_undeclared(backend_capabilities(), plan, "the CUDA backend");
    if (plan.mixed()) plan.padded = padded_layout(plan.layers);
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
    // Streamed rows (the core's batch source) are staged batch by batch whatever the budget.
    layout.resident = !plan.batch_source && plan.dataset_bytes() <= layout.spare;
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

// brain::cuda::DevicePlan: a validated session descriptor (sdk::SessionPlan) with the device memory it needs, and
// how that memory fits the budget. Computed from the descriptor alone, before any CUDA call.
#pragma once

#include <brain/backend_capabilities.hpp>
#include <brain/plugin_abi.h>
#include <brain/session_plan.hpp>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace brain::cuda {

using sdk::LayerPlan;

// Where each layer's weights and biases sit in the mixed-precision layout (precision bf16) of the parameters, their
// gradients, the optimizer state and the bf16 copy: every block starts on a multiple of mixed_alignment values, so
// that each operand of a bf16 product is aligned for the tensor cores. The padding holds zeros.
struct PaddedLayout {
    std::vector<std::size_t> weight_offset; // per layer
    std::vector<std::size_t> bias_offset;   // per layer
    std::size_t count = 0;                  // values in the layout, padding included
};
inline constexpr std::size_t mixed_alignment = 128;

// The padded layout of `layers`.
PaddedLayout padded_layout(const std::vector<LayerPlan>& layers);

// The shared validated plan plus the CUDA backend's byte counts, as the allocator charges them.
struct DevicePlan : sdk::SessionPlan {
    // Tensor bytes for batches of `batch_rows` rows: parameters, gradients, optimizer state, the scalar block, the
    // batch's inputs and targets, and per layer z, a (not for linear layers, whose a is z) and delta. Mixed: the
    // padded float32 parameters, gradients and state and the bf16 copy, the scalar block, bf16 inputs and float32
    // targets, per hidden layer bf16 a (and z where kept), the output layer's float32 z, a and delta, and the bf16
    // delta buffers as wide as the widest layer.
    std::uint64_t tensor_bytes(std::size_t batch_rows) const noexcept;
    // Workspace the kernels need besides cuBLAS's: the per-row losses of a batch and the learning rate of each of
    // an epoch's steps (batches of `batch_rows` rows).
    std::uint64_t scratch_bytes(std::size_t batch_rows) const noexcept;
    // Device bytes of the resident data set: features, targets and the epoch's permutation.
    std::uint64_t dataset_bytes() const noexcept;
    // Batches an epoch has.
    std::size_t batch_count() const noexcept;
    // The data set row at `position` of epoch `epoch`'s batch order (the seeded shuffle, or the file's order).
    std::size_t row_at(std::uint64_t epoch, std::size_t position) const noexcept {
        return config.shuffle ? static_cast<std::size_t>(brain_shuffle_index(config.seed, epoch, rows, position))
                              : position;
    }

    // Mixed precision (precision bf16): float32 parameters, gradients and optimizer state with a bf16 copy of the
    // parameters, in the padded layout; bf16 inputs, activations and deltas; float32 output layer and targets.
    bool mixed() const noexcept { return precision == BRAIN_PRECISION_BF16; }
    PaddedLayout padded; // filled when mixed()
    // Parameters the device holds per copy: the padded layout's length when mixed, else parameter_count.
    std::size_t device_parameter_count() const noexcept { return mixed() ? padded.count : parameter_count; }
    // Optimizer-state values the device holds (one or two per device parameter).
    std::size_t device_state_count() const noexcept;
    // Whether hidden layer l keeps bf16 pre-activations beside its activations: GELU and leaky ReLU, whose
    // derivative needs z (ReLU's, sigmoid's and tanh's need only a; a linear layer's a is its z).
    bool keeps_pre_activations(std::size_t l) const noexcept;
    // The most outputs of any layer.
    std::size_t widest_layer() const noexcept;
    // bf16 delta buffers of a mixed session: a layer's delta is read only until the layer below has its own, so
    // two alternate (one for a one-layer network).
    std::size_t mixed_delta_buffers() const noexcept { return layers.size() >= 2 ? 2 : 1; }
};

// What the CUDA backend runs (its capabilities entry): every activation, loss and optimizer, float32 and TF32.
brain_capabilities backend_capabilities() noexcept;

// Validate a descriptor; INVALID_ARGUMENT naming the value at fault, UNSUPPORTED naming a feature outside
// backend_capabilities().
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

// Which layers of a fused-epoch session sum their weight gradients in row shares (kernels/fused_epoch.cu,
// fused_row_shares), and the workspace that takes: a host-side rule, apart from the session so that it can be
// tested without a GPU.
#pragma once

#include <brain/session_plan.hpp>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace brain::cuda {

// The layers in row shares (bit l: layer l), the widest such gradient in floats and the workspace in bytes.
struct RowSharePlan {
    std::uint32_t layers = 0;
    std::uint64_t width = 0;
    std::uint64_t bytes = 0;
};

// The row-share layers of a network trained in batches of `batch` rows; `head_backward`: the head's backward pass
// runs in the loss phase (the session has room for its gradient's shares), so the head has no phase of its own.
RowSharePlan plan_row_shares(const std::vector<sdk::LayerPlan>& layers, std::size_t batch, bool head_backward);

} // namespace brain::cuda

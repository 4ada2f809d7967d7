// The tile heights of the fused epoch kernel's backward phases (kernels/fused_epoch.cu): by default one height for
// a phase's weight gradient and delta (fused_phase_tile, kernels/fused_gemm.cuh); where a cost model says so, each
// its own. A host-side rule, worked out once per session for full batches, apart from the session so that it can be
// tested without a GPU.
#pragma once

#include <brain/session_plan.hpp>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace brain::cuda {

// Bit l of `flip_dw` / `flip_dx`: layer l's weight gradient / delta takes the other tile height (16 rows instead of
// 32, or 32 instead of 16) than the one fused_phase_tile gives its phase.
struct TileHeightPlan {
    std::uint32_t flip_dw = 0;
    std::uint32_t flip_dx = 0;
};

// The plan for batches of `batch` rows on a grid of `grid` blocks (one per SM).
TileHeightPlan plan_tile_heights(const std::vector<sdk::LayerPlan>& layers, std::size_t batch, unsigned grid);

} // namespace brain::cuda

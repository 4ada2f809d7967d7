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
// 32, or 32 instead of 16) than the one fused_phase_tile gives its phase. Bit l of `flip_bias`: layer l's bias
// gradient is summed the other way (in the weight gradient's tiles, or by a warp per column) than
// fused_bias_in_tiles decides from the phase's height: where the flipped heights leave too few blocks free for the
// columns' warps and the warps left over would lengthen the phase on blocks that hold tiles.
struct TileHeightPlan {
    std::uint32_t flip_dw = 0;
    std::uint32_t flip_dx = 0;
    std::uint32_t flip_bias = 0;
};

// The plan for batches of `batch` rows on a grid of `grid` blocks (one per SM).
TileHeightPlan plan_tile_heights(const std::vector<sdk::LayerPlan>& layers, std::size_t batch, unsigned grid);

} // namespace brain::cuda

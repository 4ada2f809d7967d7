// The row-share rule of the fused epoch kernel (row_share_plan.hpp). Each share's rows of delta and input are
// copied contiguously into a block's shared memory and summed there, and the next phase adds the shares up and
// applies the optimizer (for layer 0, a phase of its own), where a warp per output or a tile would walk the whole
// batch. The thresholds are measured (docs/performance-grid.md).
#include "row_share_plan.hpp"

#include "device_scalars.h"

#include <algorithm>
#include <bit>

namespace brain::cuda {

namespace {

// From batches of this many rows: below it, a warp per output or a tile sums few enough rows.
constexpr std::size_t min_rows = 256;
// Layer 0's shares take a phase and a barrier of their own: they save 1.5-1.7 µs a step at 1,024 rows and cost
// 3.3 µs at 256.
constexpr std::size_t first_layer_min_rows = 1024;
// Below this many rows, row shares only where most of the layers take them: the row-share kernel's other phases
// run about 5% slower (its code moves ptxas's schedule), which one layer's shares over 256 rows do not win back
// (grid point g34, its head alone: 0.94x; g40, 7 of 9 layers: 1.05x).
constexpr std::size_t any_layers_rows = 512;
// A share's multiply-adds, on one block: beyond, a share takes longer than the tiles' chunks it replaces (layers
// of 256 on batches of 256 stay in tiles).
constexpr std::uint64_t max_work = 450000;
// A layer's shares together, in floats: the next phase reads them all beside its own work.
constexpr std::uint64_t max_floats = 1u << 19;

} // namespace

RowSharePlan plan_row_shares(const std::vector<sdk::LayerPlan>& layers, std::size_t batch, bool head_backward) {
    RowSharePlan plan;
    // A one-layer network's only phase is its output layer's.
    if (layers.size() < 2 || batch < min_rows) return plan;
    // As the kernel cuts a full batch (its last may have fewer rows, and then fewer in each share).
    const std::size_t shares = brain_fused_row_share_count(static_cast<uint32_t>(batch));
    const std::size_t share_rows = (batch + shares - 1) / shares;
    const std::size_t top = layers.size() - (head_backward ? 2 : 1);
    for (std::size_t l = batch >= first_layer_min_rows ? 0 : 1; l <= top; ++l) {
        const sdk::LayerPlan& layer = layers[l];
        const std::uint64_t width = std::uint64_t{layer.outputs} * (layer.inputs + 1);
        const std::size_t row_floats = brain_fused_row_share_pitch(static_cast<uint32_t>(layer.outputs)) +
                                       brain_fused_row_share_pitch(static_cast<uint32_t>(layer.inputs + 1));
        if (share_rows * row_floats <= BRAIN_FUSED_ROW_SHARE_FLOATS && width * share_rows <= max_work &&
            width * shares <= max_floats) {
            plan.layers |= 1u << l;
            plan.width = std::max(plan.width, width);
        }
    }
    if (batch < any_layers_rows && 2 * static_cast<std::size_t>(std::popcount(plan.layers)) < layers.size())
        return RowSharePlan{};
    if (plan.layers != 0) plan.bytes = 4ull * 2 * BRAIN_FUSED_ROW_SHARES_MAX * plan.width;
    return plan;
}

} // namespace brain::cuda

// The fused epoch kernel's products as fused_gemm runs them (fused_gemm.cuh), built from the epoch's layers: a
// layer's input as an operand, each layer's weight gradient and the delta of the layer below, and where a phase's
// weight gradient sums its bias gradient.
#pragma once

#include "fused_gemm.cuh"

// The layer's input as an operand: the batch's rows of the data set (through the permutation) or the activations
// of the layer below. As the A operand of a forward GEMM (rows = batch positions) or, transposed nowhere, as the
// B operand of a weight gradient (rows = batch positions = the K dimension).
static __device__ FusedOperand layer_input(const brain_fused_epoch_args& a, unsigned l, brain_u64 start,
                                           const uint32_t* batch_rows) {
    FusedOperand op;
    if (l == 0) {
        const brain_u64 in = a.layers[0].inputs;
        op.p = a.perm ? a.features : a.features + start * in;
        op.index = a.perm ? batch_rows : nullptr;
        op.rs = in;
    } else {
        op.p = a.layers[l - 1].a;
        op.index = nullptr;
        op.rs = a.layers[l].inputs;
    }
    op.cs = 1;
    return op;
}

// Layer l's weight gradient: dW (out x in) = delta^T (out x rows) input (rows x in); applied to the parameters at
// once when `update`, stored in grads otherwise. Its bias gradient is summed elsewhere unless `bias` is set.
static __device__ FusedGemm weight_gradient_gemm(const brain_fused_epoch_args& a, unsigned l, unsigned rows,
                                                 brain_u64 start, const uint32_t* batch_rows, bool update) {
    const brain_fused_layer& layer = a.layers[l];
    FusedGemm g;
    g.a.p = layer.delta;
    g.a.index = nullptr;
    g.a.rs = 1;
    g.a.cs = layer.outputs;
    g.b = layer_input(a, l, start, batch_rows);
    g.m = layer.outputs;
    g.n = layer.inputs;
    g.k = rows;
    g.layer = &layer;
    g.update = update;
    return g;
}

// The delta of the layer below l (l > 0): delta (rows x out) W (out x in), times the activation's derivative there.
static __device__ FusedGemm delta_gemm(const brain_fused_epoch_args& a, unsigned l, unsigned rows) {
    const brain_fused_layer& layer = a.layers[l];
    FusedGemm g;
    g.a.p = layer.delta;
    g.a.index = nullptr;
    g.a.rs = layer.outputs;
    g.a.cs = 1;
    g.b.p = a.params + layer.weight_offset;
    g.b.index = nullptr;
    g.b.rs = layer.inputs;
    g.b.cs = 1;
    g.m = rows;
    g.n = layer.inputs;
    g.k = layer.outputs;
    g.layer = &layer;
    g.below = &a.layers[l - 1];
    return g;
}

// Whether a phase's weight gradient (tiles of height tm, beside `other` when `with_other`) sums its bias
// gradient in its tiles: when the blocks the phase's GEMMs leave free have fewer warps than the bias has columns,
// the other way round where `flip` (the plugin's count at the products' own heights, tile_height_plan.hpp).
// A warp per column on free blocks runs beside the tiles; on blocks that also have a tile, after it, which is
// slower than the tiles' own sums where few blocks are free and faster where many are (docs/performance-grid.md).
static __device__ bool fused_bias_in_tiles(const FusedGemm& dw, const FusedGemm& other, bool with_other,
                                           unsigned tm, bool flip) {
    if (fused_uses_warps(dw)) return false;
#if BRAIN_FUSED_BIAS_IN_TILES == 2
    const brain_u64 busy = fused_busy_blocks(dw, tm) + (with_other ? fused_busy_blocks(other, tm) : 0);
    const brain_u64 free = busy < gridDim.x ? gridDim.x - busy : 0;
    return (free * BRAIN_FUSED_WARPS < dw.m) != flip;
#else
    return BRAIN_FUSED_BIAS_IN_TILES == 1;
#endif
}

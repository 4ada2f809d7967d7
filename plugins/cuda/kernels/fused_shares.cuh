// The fused epoch kernel's gradients in shares (fused_epoch.cu runs them): a phase sums a layer's weight and bias
// gradient in parts (a head's per block, a folded head's and a row-share layer's per slice of the batch's rows) and
// the next phase adds the parts up in a fixed order and applies the optimizer, so that no fence and no counter is
// needed: the barrier between the phases orders them.
#pragma once

#include "fused_products.cuh"

#ifndef BRAIN_FUSED_GRADIENT_LOADS
#define BRAIN_FUSED_GRADIENT_LOADS 32
#endif

// Layer `layer`'s gradient (per output, the weights' row and the bias) from `shares` shares at `partial`, added in
// order, and the optimizer step on its parameters at once (nothing reads them until the next step's forward phase
// of the layer). A thread per parameter, on the blocks from `first` on. The shares: the blocks' of a head's
// fused_output_and_loss, a folded head's row slices (fold_head_shares), or a hidden layer's row shares
// (fused_row_shares). LOADS shares are loaded at once before they are added, so that a thread waits for one L2
// round trip per LOADS shares rather than per share (the order of the additions is the same for every LOADS).
template <unsigned LOADS>
static __device__ void fused_layer_gradient(const FusedContext& c, const brain_fused_layer& layer, unsigned first,
                                            unsigned shares, const float* partial) {
    const unsigned inputs = layer.inputs, width = layer.outputs * (inputs + 1);
    const unsigned rank = fused_block_rank(first);
    for (unsigned e = rank * BRAIN_FUSED_THREADS + threadIdx.x; e < width; e += gridDim.x * BRAIN_FUSED_THREADS) {
        float sum = 0.0f;
        for (unsigned q0 = 0; q0 < shares; q0 += LOADS) {
            float v[LOADS];
#pragma unroll
            for (unsigned u = 0; u < LOADS; ++u)
                v[u] = q0 + u < shares ? partial[(brain_u64)(q0 + u) * width + e] : 0.0f;
#pragma unroll
            for (unsigned u = 0; u < LOADS; ++u)
                if (q0 + u < shares) sum += v[u];
        }
        const unsigned n = e / (inputs + 1), j = e - n * (inputs + 1);
        fused_update(c, j < inputs ? layer.weight_offset + (brain_u64)n * inputs + j : layer.bias_offset + n, sum);
    }
}

// The blocks fused_layer_gradient keeps busy on `layer`: a thread per parameter.
static __device__ __forceinline__ unsigned fused_gradient_blocks(const brain_fused_layer& layer) {
    return (layer.outputs * (layer.inputs + 1) + BRAIN_FUSED_THREADS - 1) / BRAIN_FUSED_THREADS;
}

// The head's gradient from `shares` shares at `partial` (fused_layer_gradient).
template <unsigned LOADS>
static __device__ void fused_head_gradient(const FusedContext& c, unsigned first, unsigned shares,
                                           const float* partial) {
    fused_layer_gradient<LOADS>(c, c.args->layers[c.args->layer_count - 1], first, shares, partial);
}

// Layer l's buffer of row shares: layer l writes it in its backward phase while the phase reads layer l + 1's.
static __device__ __forceinline__ float* row_share_buffer(const brain_fused_epoch_args& a, unsigned l) {
    return a.row_shares + (brain_u64)(l & 1u) * BRAIN_FUSED_ROW_SHARES_MAX * a.row_share_width;
}

#ifndef BRAIN_FUSED_ROW_SHARES
#define BRAIN_FUSED_ROW_SHARES 1
#endif
// A hidden layer's weight and bias gradient in `shares` row shares (the plugin picks such layers:
// row_share_layers): share s sums rows [s r, s r + r) of delta^T [input | 1] (input: layer_input's, for layer 0
// the data set's rows in the batch's order) into partial[s * width ...] (width =
// outputs x (inputs + 1), the layout of fused_layer_gradient, which adds the shares up and applies the optimizer in
// the next phase). Over many rows this replaces a warp per output striding over the batch (two scattered loads per
// multiply-add) or a tile walking the batch chunk after chunk with contiguous copies of the share's rows into
// shared memory and a 4 x 4 block of outputs per thread there; the share's sums need no fence and no counter,
// since the next phase's barrier orders them. On the blocks from `first` on; every thread of a block with a share
// calls it.
static __device__ void fused_row_shares(const brain_fused_layer& layer, const FusedOperand& input, unsigned rows,
                                        unsigned shares, unsigned first, float* partial, TileShared& sh) {
    const unsigned outputs = layer.outputs, inputs = layer.inputs, pitch = inputs + 1;
    const unsigned width = outputs * pitch, slice = (rows + shares - 1) / shares;
    // Shared rows padded to whole float4s (zeros past the layer), so that each thread reads its 4 deltas and 4
    // inputs of a row as two 16-byte loads.
    const unsigned dp = brain_fused_row_share_pitch(outputs), xp = brain_fused_row_share_pitch(pitch);
    const unsigned bj_count = xp / 4, blocks = dp / 4 * bj_count;
    const unsigned rank = fused_block_rank(first);
    static_assert(sizeof(sh.stage) >= 4 * BRAIN_FUSED_ROW_SHARE_FLOATS, "a share's rows fit the tile stages");
    float* const deltas = &sh.stage[0].a[0][0]; // slice x dp
    float* const xs = deltas + slice * dp;      // slice x xp: the inputs, a column of ones (the bias), zeros
    const float* const delta = layer.delta;
    for (unsigned s = rank; s < shares; s += gridDim.x) {
        const unsigned r0 = min(rows, s * slice), count = min(rows, r0 + slice) - r0;
        __syncthreads(); // the block's earlier use of the stages is over
        for (unsigned e = threadIdx.x; e < count * dp; e += BRAIN_FUSED_THREADS) {
            const unsigned r = e / dp, i = e - r * dp;
            deltas[e] = i < outputs ? delta[(brain_u64)(r0 + r) * outputs + i] : 0.0f;
        }
        for (unsigned e = threadIdx.x; e < count * xp; e += BRAIN_FUSED_THREADS) {
            const unsigned r = e / xp, j = e - r * xp;
            xs[e] = j < inputs ? input.at(r0 + r, j) : j == inputs ? 1.0f : 0.0f;
        }
        __syncthreads();
        for (unsigned q = threadIdx.x; q < blocks; q += BRAIN_FUSED_THREADS) {
            const unsigned bi = q / bj_count, bj = q - bi * bj_count;
            float acc[4][4] = {};
#pragma unroll 4
            for (unsigned r = 0; r < count; ++r) {
                const float4 d = *reinterpret_cast<const float4*>(deltas + r * dp + 4 * bi);
                const float4 x = *reinterpret_cast<const float4*>(xs + r * xp + 4 * bj);
#pragma unroll
                for (unsigned i = 0; i < 4; ++i)
#pragma unroll
                    for (unsigned j = 0; j < 4; ++j) acc[i][j] += component(d, i) * component(x, j);
            }
#pragma unroll
            for (unsigned i = 0; i < 4; ++i)
#pragma unroll
                for (unsigned j = 0; j < 4; ++j)
                    if (4 * bi + i < outputs && 4 * bj + j < pitch)
                        partial[(brain_u64)s * width + (4 * bi + i) * pitch + 4 * bj + j] = acc[i][j];
        }
    }
}

#if BRAIN_FUSED_FOLDED_HEAD
// A folded head (BRAIN_FUSED_FOLDED_HEAD): every batch row's dL/dz into c.head_dl (shared memory), a row per
// thread, from the head's bias and the shares of its dot product that the forward phase below left in c.head_dots
// (rows x head_tiles, added in tile order) and the row's target, by the per-element functions of
// output_loss_lane. The grid's last block also stores the rows' losses (row_loss) and adds up the batch's
// (add_batch_loss). Every thread of the block calls it; it ends with a barrier of the block.
static __device__ void fold_head_rows(const FusedContext& c) {
    const brain_fused_epoch_args& a = *c.args;
    const brain_fused_layer& out = a.layers[a.layer_count - 1];
    const unsigned r = threadIdx.x, rows = c.rows, tiles = c.head_tiles;
    const bool loss_block = blockIdx.x + 1 == gridDim.x;
    float* const dl = c.head_dl;
    if (r < rows) {
        const brain_u64 row = a.perm ? (brain_u64)c.batch_rows[r] : c.start + r;
        const float t = a.targets[row];
        float sum = 0.0f;
        for (unsigned q = 0; q < tiles; ++q) sum += c.head_dots[(brain_u64)r * tiles + q];
        const float z = sum + a.params[out.bias_offset];
        const float scale = loss_scale(a.loss, rows, 1);
        const float activated = brain_activate(out.activation, z, out.param);
        dl[r] = loss_delta(a.loss, out.activation, z, activated, t, scale, out.param);
        if (loss_block) a.row_loss[r] = (float)loss_term(a.loss, z, activated, t, 0.0) * scale;
    }
    if (loss_block) add_batch_loss(a.scalars, a.row_loss, rows, c.batch); // each thread reads the row it stored
    __syncthreads();
}

// A folded head's gradient in `shares` row slices (dL/dW_head[j] = sum over rows of dl[r] a_below[r][j], the bias's
// the sum of dl; dl = c.head_dl, filled by fold_head_rows), slice s to partial[s * (inputs + 1) ...], a thread per
// parameter, on the blocks from `first` on; fused_head_gradient adds the slices up in the next phase.
static __device__ void fold_head_shares(const FusedContext& c, unsigned first, unsigned shares, float* partial) {
    const brain_fused_epoch_args& a = *c.args;
    const unsigned rows = c.rows;
    const float* dl = c.head_dl;
    const brain_fused_layer& out = a.layers[a.layer_count - 1];
    const float* below = a.layers[a.layer_count - 2].a;
    const unsigned inputs = out.inputs, width = inputs + 1, slice = (rows + shares - 1) / shares;
    const unsigned rank = fused_block_rank(first);
    for (unsigned q = rank; q < shares; q += gridDim.x) {
        const unsigned r0 = q * slice, r1 = min(rows, r0 + slice);
        for (unsigned e = threadIdx.x; e < width; e += BRAIN_FUSED_THREADS) {
            float sum = 0.0f;
#pragma unroll 8
            for (unsigned r = r0; r < r1; ++r)
                sum += (e < inputs ? below[(brain_u64)r * inputs + e] : 1.0f) * dl[r];
            partial[(brain_u64)q * width + e] = sum;
        }
    }
}
#endif

// The fused epoch kernel's loss phase (fused_epoch.cu runs it): a warp per batch row, and for a narrow output
// layer the layer itself, its loss and, where it fits, its backward pass in the same phase.
#pragma once

#include "fused_shares.cuh"

// Batch position r's loss row, by one warp, as brain_output_loss (the output layer's z holds the bias): its
// activation, loss and delta; the row's loss goes to row_loss[r].
static __device__ void fused_loss_row(const brain_fused_epoch_args& a, const brain_fused_layer& out, unsigned r,
                                      unsigned rows, brain_u64 start, const uint32_t* batch_rows, unsigned lane) {
    const unsigned k = out.outputs;
    const brain_u64 row = a.perm ? (brain_u64)batch_rows[r] : start + r;
    const brain_u64 at = (brain_u64)r * k;
    const float total = output_loss_row(out.z + at, out.a + at, out.delta + at, a.targets + row * k, rows, k,
                                        out.activation, out.param, a.loss, lane);
    if (lane == 0) a.row_loss[r] = total;
}

#define BRAIN_FUSED_HEAD_STEPS 8 // a row of the head's input held in registers: 8 x 32 floats
// 1 stamps the loss phase's parts on block 0's first warp into the phase profile (test builds only, through
// BRAIN_CUDA_KERNEL_DEFINES): where the phase's time goes (docs/performance-grid.md); 2 also times a chain of
// dependent loads from the head's input, its weights and the targets before the rows start. 0 (the default): no
// stamps, and the kernel's code is the same as without the switch.
#ifndef BRAIN_FUSED_LOSS_STAMPS
#define BRAIN_FUSED_LOSS_STAMPS 0
#endif

// Whether this thread stamps the loss phase of `batch`: block 0's first thread, in the profiled batch.
static __device__ __forceinline__ bool loss_stamper(const brain_fused_epoch_args& a, int batch) {
    return a.profile && batch == 1 && blockIdx.x == 0 && threadIdx.x == 0;
}

// Stamps `part` of the loss phase (BRAIN_FUSED_LOSS_STAMPS): the SM's clock, and at the first and last parts
// (`timer`) the global timer too, which converts the clock's cycles to nanoseconds.
static __device__ __forceinline__ void loss_stamp(const brain_fused_epoch_args& a, int batch, unsigned part,
                                                  bool timer) {
#if BRAIN_FUSED_LOSS_STAMPS
    if (!loss_stamper(a, batch)) return;
    __syncwarp(1u);
    a.profile[BRAIN_FUSED_LOSS_STAMP_SLOT + 2 + part] = clock64();
    if (timer) a.profile[BRAIN_FUSED_LOSS_STAMP_SLOT + (part ? 1 : 0)] = global_timer();
#endif
}

// The head's backward pass stores a row's delta of the layer below: back (delta_out W) times the activation's
// derivative at (z, x), lane + 32 q for q < BRAIN_FUSED_HEAD_STEPS, those below `left`. With the activation fixed
// (ACT >= 0) the derivative's switch folds away: unrolled copies of every activation's formula would make the code
// of this pass large, and it runs once per step, from a cold instruction cache.
template <int ACT>
static __device__ __forceinline__ void head_deltas(float* delta, const float* back, const float* z, const float* x,
                                                   unsigned lane, unsigned left, int activation, float param) {
#pragma unroll
    for (unsigned q = 0; q < BRAIN_FUSED_HEAD_STEPS; ++q)
        if (q * BRAIN_WARP + lane < left)
            delta[q * BRAIN_WARP] = back[q] * brain_derivative(ACT >= 0 ? ACT : activation, z[q], x[q], param);
}

// The loss phase takes its rows in one of two ways, chosen per kernel (BY_BLOCK): a warp per batch row
// (fused_output_and_loss), or BRAIN_FUSED_HEAD_BLOCK_ROWS rows per block (fused_head_by_block) in
// brain_fused_epoch_head_rows, which the plugin launches only where the grid has a block for every row of a batch.
// A tuning constant: one row per block, and so a share of the head's gradient per row for the next phase to add up,
// is faster than four rows per block with at most 32 shares on 14 of 16 grid points (docs/performance-grid.md).
#define BRAIN_FUSED_HEAD_BLOCK_ROWS 1

// The blocks that have rows in the loss phase (and so shares of the head's gradient): warps, or blocks, take rows
// in order.
template <bool BY_BLOCK>
static __device__ __forceinline__ unsigned head_row_blocks(unsigned rows) {
    const unsigned per_block = BY_BLOCK ? BRAIN_FUSED_HEAD_BLOCK_ROWS : BRAIN_FUSED_WARPS;
    return min(gridDim.x, (rows + per_block - 1) / per_block);
}

// The floats ahead of the staged copy of the head's weights in the loss phase's shared memory: the warps' packed
// gradient slices where warps take rows and the head's backward pass runs in the phase (`backward`), the block's
// rows' values (each output's z, then its dL/dz) where blocks take rows.
template <bool BY_BLOCK>
static __device__ __forceinline__ brain_u64 head_slices_floats(const brain_fused_layer& out, bool backward) {
    if (BY_BLOCK) return (brain_u64)BRAIN_FUSED_HEAD_BLOCK_ROWS * BRAIN_FUSED_HEAD_WIDTH;
    return backward ? (brain_u64)BRAIN_FUSED_WARPS * out.outputs * (out.inputs + 1) : 0;
}

// Whether the loss phase reads the head's weights from a copy in the block's shared memory (only blocks with rows
// do, which take them in order): where the copy fits after head_slices_floats and, where blocks take rows, where
// their warps take more than one of the rows' outputs each. With one output per warp the forward dot products are
// one round of loads and each weight is read once there and once backward, so the copy's queueing and wait cost
// more than the reads from global memory they replace (docs/performance-grid.md).
template <bool BY_BLOCK>
static __device__ __forceinline__ bool head_staged(const brain_fused_layer& out, bool backward, unsigned rows) {
#if BRAIN_FUSED_HEAD_STAGED
    if (BY_BLOCK && BRAIN_FUSED_HEAD_BLOCK_ROWS * out.outputs <= BRAIN_FUSED_WARPS) return false;
    const brain_u64 packed = head_slices_floats<BY_BLOCK>(out, backward);
    return packed + (brain_u64)out.outputs * out.inputs <= BRAIN_FUSED_WARPS * BRAIN_FUSED_HEAD_SLICE &&
           (BY_BLOCK ? blockIdx.x < head_row_blocks<BY_BLOCK>(rows) : blockIdx.x * BRAIN_FUSED_WARPS < rows);
#else
    return false;
#endif
}

// Where the staged copy of the head's weights lies in the slices' memory: after head_slices_floats.
template <bool BY_BLOCK>
static __device__ __forceinline__ float* head_weights_copy(float* slices, const brain_fused_layer& out,
                                                           bool backward) {
    if (BY_BLOCK) return slices + head_slices_floats<BY_BLOCK>(out, backward);
    // head_slices_floats in 32 bits: the 64-bit offset compiles the warp-per-row kernels to another schedule.
    return slices + (backward ? BRAIN_FUSED_WARPS * out.outputs * (out.inputs + 1) : 0u);
}

// Queues the copy of the head's weights to `to` as one group of cp.async copies, all in flight at once (a loop of
// loads and stores would wait for each load in turn).
static __device__ void head_stage_weights(const brain_fused_epoch_args& a, const brain_fused_layer& out,
                                          float* to) {
    const float* weights = a.params + out.weight_offset;
    const unsigned count = out.outputs * out.inputs;
    for (unsigned e = threadIdx.x; e < count; e += BRAIN_FUSED_THREADS) tile_copy(to + e, weights + e, true);
    tile_commit();
}

// A lane's terms of the dot product of x and w over `inputs` elements (lane, lane + 32, ...), added in that order;
// warp_sum of them is the whole product.
static __device__ __forceinline__ float warp_dot_terms(const float* x, const float* w, unsigned inputs,
                                                       unsigned steps, unsigned lane) {
    float sum = 0.0f;
#pragma unroll 8
    for (unsigned step = 0; step < steps; ++step) {
        const unsigned i = step * BRAIN_WARP + lane, ic = min(i, inputs - 1);
        const float v = x[ic] * w[ic];
        sum += i < inputs ? v : 0.0f;
    }
    return sum;
}

// fused_output_and_loss with BRAIN_FUSED_HEAD_BLOCK_ROWS batch rows per block: the block's warps on its rows'
// outputs at once (the pairs of row and output in turn), a warp per row on its loss, and with `below` every thread
// on its columns of the backward pass: below's delta there for each row, and the rows' terms of the head's gradient
// added in row order, the block's share in head_partial. Each value is summed as a warp per row sums it, in the
// same order. The phase is then a few steps deep instead of one warp's walk through every output and column of a
// row.
static __device__ void fused_head_by_block(const FusedContext& c, const brain_fused_layer& out,
                                           const FusedOperand& input, unsigned rows, brain_u64 start,
                                           const uint32_t* batch_rows, const brain_fused_layer* below,
                                           float* slices, bool ahead) {
    const brain_fused_epoch_args& a = *c.args;
    const unsigned k = out.outputs, inputs = out.inputs;
    const unsigned warp = threadIdx.x / BRAIN_WARP, lane = threadIdx.x % BRAIN_WARP;
    const unsigned steps = (inputs + BRAIN_WARP - 1) / BRAIN_WARP;
    const unsigned per_block = BRAIN_FUSED_HEAD_BLOCK_ROWS, r0 = blockIdx.x * per_block;
    float* const row_values = slices; // [row of the block][output]: z, then dL/dz
    loss_stamp(a, c.batch, 0, true);
    const bool staged = head_staged<true>(out, below != nullptr, rows);
    const float* weights = a.params + out.weight_offset;
    if (staged) {
        float* const copy = head_weights_copy<true>(slices, out, below != nullptr);
        if (!ahead) head_stage_weights(a, out, copy);
        tile_wait<0>();
        weights = copy;
    }
    if (r0 >= rows) return;
    const unsigned count = min(per_block, rows - r0); // the block's rows
    __syncthreads();                                  // the staged copy has landed for every thread
    loss_stamp(a, c.batch, 1, false);
    for (unsigned p = warp; p < count * k; p += BRAIN_FUSED_WARPS) {
        const unsigned i = p / k, n = p - i * k;
        const float bias = a.params[out.bias_offset + n];
        const float* x = input.ptr(r0 + i, 0);
        const float sum = warp_sum(warp_dot_terms(x, weights + (brain_u64)n * inputs, inputs, steps, lane));
        if (lane == 0) row_values[i * BRAIN_FUSED_HEAD_WIDTH + n] = sum + bias;
    }
    __syncthreads(); // every output's z
    loss_stamp(a, c.batch, 2, false);
    // Warp i takes row i: its dL/dz, which the backward pass waits for, and its loss, which nothing waits for.
    // Where the other warps can take the backward pass's columns in as many rounds as the whole block, the rows'
    // warps leave it to them and add up their losses meanwhile (`defer`), a chain of shuffles and double-precision
    // functions off the phase's path; elsewhere they add them up first, as they would after their columns.
    static_assert(BRAIN_FUSED_HEAD_BLOCK_ROWS <= BRAIN_FUSED_WARPS / 2,
                  "a warp per row, and warps for the columns");
    const unsigned row_threads = count * BRAIN_WARP, column_threads = BRAIN_FUSED_THREADS - row_threads;
    const bool defer = below && (inputs + column_threads - 1) / column_threads ==
                                    (inputs + BRAIN_FUSED_THREADS - 1) / BRAIN_FUSED_THREADS;
    const bool has_row = warp < count;
    const unsigned r = r0 + warp;
    const bool on = lane < k;
    float z = 0.0f, target = 0.0f, activated = 0.0f;
    if (has_row) {
        const brain_u64 data_row = a.perm ? (brain_u64)batch_rows[r] : start + r;
        target = on ? a.targets[data_row * k + lane] : 0.0f;
        float* const values = row_values + warp * BRAIN_FUSED_HEAD_WIDTH;
        z = on ? values[lane] : 0.0f;
        float dl;
        output_delta_lane(z, target, on, rows, k, out.activation, out.param, a.loss, activated, dl);
        const brain_u64 at = (brain_u64)r * k;
        if (on) {
            values[lane] = dl;
            out.z[at + lane] = z;
            out.a[at + lane] = activated; // z's own buffer when the head is linear (the same value then)
            out.delta[at + lane] = dl;
        }
        if (!defer) {
            const float total = output_total_lane(z, activated, target, on, rows, k, a.loss);
            if (lane == 0) a.row_loss[r] = total;
        }
    }
    loss_stamp(a, c.batch, 3, false);
    if (below) {
        __syncthreads(); // every output's dL/dz
        if (defer && has_row) {
            const float total = output_total_lane(z, activated, target, on, rows, k, a.loss);
            if (lane == 0) a.row_loss[r] = total;
        }
        // The columns' threads: all of them, or those after the rows' warps (`defer`).
        const unsigned first = defer ? row_threads : 0u, threads = BRAIN_FUSED_THREADS - first;
        const float* const below_z = below->z;
        float* const below_delta = below->delta;
        const int activation = below->activation;
        const float param = below->param;
        float* const share = a.head_partial + (brain_u64)blockIdx.x * k * (inputs + 1);
        if (threadIdx.x >= first) {
            for (unsigned j = threadIdx.x - first; j < inputs; j += threads) {
                // Column j of the block's rows (the head's input and below's z) in registers, loaded ahead of the
                // stores, which the compiler may not move loads past: one wait for them all instead of one per row.
                float xs[BRAIN_FUSED_HEAD_BLOCK_ROWS], zs[BRAIN_FUSED_HEAD_BLOCK_ROWS];
#pragma unroll
                for (unsigned i = 0; i < BRAIN_FUSED_HEAD_BLOCK_ROWS; ++i) {
                    const unsigned ic = min(i, count - 1); // clamped: a repeated load, never used
                    xs[i] = input.ptr(r0 + ic, 0)[j];
                    zs[i] = below_z[(brain_u64)(r0 + ic) * inputs + j];
                }
#pragma unroll
                for (unsigned i = 0; i < BRAIN_FUSED_HEAD_BLOCK_ROWS; ++i)
                    if (i < count) {
                        const float* const dl = row_values + i * BRAIN_FUSED_HEAD_WIDTH;
                        float back = 0.0f;
#pragma unroll 4
                        for (unsigned n = 0; n < k; ++n) back += dl[n] * weights[(brain_u64)n * inputs + j];
                        below_delta[(brain_u64)(r0 + i) * inputs + j] =
                            back *
                            brain_derivative<BRAIN_FUSED_EPILOGUE_INLINE >= 2>(activation, zs[i], xs[i], param);
                    }
                // The rows' terms of the gradient of column j, added in row order.
                for (unsigned n = 0; n < k; ++n) {
                    float sum = 0.0f;
#pragma unroll
                    for (unsigned i = 0; i < BRAIN_FUSED_HEAD_BLOCK_ROWS; ++i)
                        if (i < count) sum += row_values[i * BRAIN_FUSED_HEAD_WIDTH + n] * xs[i];
                    share[(brain_u64)n * (inputs + 1) + j] = sum;
                }
            }
            if (threadIdx.x - first < k) {
                const unsigned n = threadIdx.x - first;
                float sum = 0.0f;
                for (unsigned i = 0; i < count; ++i) sum += row_values[i * BRAIN_FUSED_HEAD_WIDTH + n];
                share[(brain_u64)n * (inputs + 1) + inputs] = sum;
            }
        }
    }
    loss_stamp(a, c.batch, 4, false);
    loss_stamp(a, c.batch, 5, false);
    loss_stamp(a, c.batch, 6, false);
    loss_stamp(a, c.batch, 7, true);
}

// The output layer and the loss in one phase, for a narrow output layer (at most BRAIN_FUSED_HEAD_WIDTH): one
// warp per batch row computes the row's outputs (each a warp-wide dot product, summed as fused_gemm_warps does)
// and then, as the loss phase would, the row's activation, loss and delta. This saves a phase and its barrier.
// With `below` (the layer under the head, when the kernel's head_backward holds) the warp goes on with the row's
// backward pass, which needs nothing from other rows: the delta of `below` (delta_out W, times the activation's
// derivative) and the row's terms of the head's weight and bias gradients (delta_out^T input, delta_out), added
// into the warp's slice of shared memory (`slices`); at the end each block with rows stores the sum of its warps'
// slices, in a fixed order, as its share in head_partial, which fused_head_gradient adds up in the next phase. This
// saves the head's backward phase and its barrier too.
template <bool BY_BLOCK>
static __device__ void
fused_output_and_loss(const FusedContext& c, const brain_fused_layer& out, const FusedOperand& input, unsigned rows,
                      brain_u64 start, const uint32_t* batch_rows, unsigned warp, unsigned warps, unsigned lane,
                      const brain_fused_layer* below, float* slices, bool ahead) {
    const brain_fused_epoch_args& a = *c.args;
    const unsigned k = out.outputs, inputs = out.inputs;
    float* const out_z = out.z;
    float* const out_a = out.a;
    float* const out_delta = out.delta;
    float* const row_loss = a.row_loss;
    const unsigned steps = (inputs + BRAIN_WARP - 1) / BRAIN_WARP;
    const unsigned width = k * (inputs + 1); // the head's gradient: per output, the weights' row and the bias
    if constexpr (BY_BLOCK) {
        fused_head_by_block(c, out, input, rows, start, batch_rows, below, slices, ahead);
        return;
    }
    loss_stamp(a, c.batch, 0, true);
    // A copy of the weights in shared memory (head_staged) turns each output's dot product from a round trip to L2
    // (every output of a row waits for the sum before it) into shared loads. Its copies are queued before the
    // phase's barrier where the phase has one in the step (`ahead`): the weights are not written in between.
    const bool staged = head_staged<false>(out, below != nullptr, rows);
    const unsigned stride = staged && below ? width : BRAIN_FUSED_HEAD_SLICE; // between the warps' slices
    float* slice = slices + (threadIdx.x / BRAIN_WARP) * stride;
    const float* weights = a.params + out.weight_offset;
    if (staged) {
        float* const copy = head_weights_copy<false>(slices, out, below != nullptr);
        if (!ahead) head_stage_weights(a, out, copy);
        tile_wait<0>();
        __syncthreads();
        weights = copy;
    }
    // below's fields, read once: `below` points into the kernel's parameters through a generic pointer, which the
    // compiler would otherwise reload after every store.
    float* below_delta = nullptr;
    const float* below_z = nullptr;
    int below_activation = 0;
    float below_param = 0.0f;
    if (below) {
        below_delta = below->delta;
        below_z = below->z;
        below_activation = below->activation;
        below_param = below->param;
        for (unsigned e = lane; e < width; e += BRAIN_WARP) slice[e] = 0.0f;
        __syncwarp();
    }
    loss_stamp(a, c.batch, 1, false);
#if BRAIN_FUSED_LOSS_STAMPS >= 2
    if (loss_stamper(a, c.batch) && rows > 0) {
        // Two loads from each buffer, 64 floats apart, each address depending on the value before (an offset of
        // zero the compiler cannot see), each followed by a stamp that takes the offset too, so that it waits for
        // the load: each part is one load's round trip.
        const float* buffers[3] = {input.ptr(0, 0), a.params + out.weight_offset, a.targets};
        unsigned offset = 0, part = 8;
#pragma unroll
        for (unsigned b = 0; b < 3; ++b)
#pragma unroll
            for (unsigned i = 0; i < 2; ++i) {
                const float v = *(const volatile float*)(buffers[b] + i * 64 + offset);
                offset = __float_as_uint(v) == 0x7fc00001u ? 1u : 0u;
                loss_stamp(a, c.batch + (int)offset, part++, false);
            }
    }
#endif
    // A row of up to BRAIN_FUSED_HEAD_STEPS * 32 inputs is read once, into registers, ahead of everything that
    // needs it (the dot products and the backward pass): every load is then in flight at once instead of each
    // waiting behind the stores before it, which the compiler may not move loads past.
    const bool whole = steps <= BRAIN_FUSED_HEAD_STEPS;
    for (unsigned r = warp; r < rows; r += warps) {
        const float* x = input.ptr(r, 0);
        const brain_u64 at = (brain_u64)r * k;
        const brain_u64 row = (brain_u64)r * inputs;
        float xs[BRAIN_FUSED_HEAD_STEPS], zs[BRAIN_FUSED_HEAD_STEPS];
        if (whole) {
#pragma unroll
            for (unsigned q = 0; q < BRAIN_FUSED_HEAD_STEPS; ++q) {
                const unsigned ic = min(q * BRAIN_WARP + lane, inputs - 1);
                xs[q] = q < steps ? x[ic] : 0.0f;
                zs[q] = below_z && q < steps ? below_z[row + ic] : 0.0f;
            }
        }
        // Output `lane`'s bias and target, loaded with the row.
        const bool on = lane < k;
        const brain_u64 data_row = a.perm ? (brain_u64)batch_rows[r] : start + r;
        const float bias = on ? a.params[out.bias_offset + lane] : 0.0f;
        const float target = on ? a.targets[data_row * k + lane] : 0.0f;
        float z = 0.0f; // output `lane`'s z
        for (unsigned n = 0; n < k; ++n) {
            const float* w = weights + (brain_u64)n * inputs;
            float sum = 0.0f;
            if (whole) {
#pragma unroll
                for (unsigned q = 0; q < BRAIN_FUSED_HEAD_STEPS; ++q) {
                    const unsigned i = q * BRAIN_WARP + lane;
                    const float v = q < steps ? xs[q] * w[min(i, inputs - 1)] : 0.0f;
                    sum += i < inputs ? v : 0.0f;
                }
            } else {
                sum = warp_dot_terms(x, w, inputs, steps, lane);
            }
            sum = warp_sum(sum);
            if (lane == n) z = sum + bias;
        }
        loss_stamp(a, c.batch, 2, false);
        // The loss row as brain_output_loss computes it (output_loss_lane), kept in registers; stored after the
        // backward pass below, whose loads would otherwise wait behind the stores.
        float activated, dl;
        const float total =
            output_loss_lane(z, target, on, rows, k, out.activation, out.param, a.loss, activated, dl);
        loss_stamp(a, c.batch, 3, false);
        if (below) {
            const float* w = weights;
            for (unsigned s0 = 0; s0 < steps; s0 += BRAIN_FUSED_HEAD_STEPS) {
                float xb[BRAIN_FUSED_HEAD_STEPS], zb[BRAIN_FUSED_HEAD_STEPS], back[BRAIN_FUSED_HEAD_STEPS];
#pragma unroll
                for (unsigned q = 0; q < BRAIN_FUSED_HEAD_STEPS; ++q) {
                    const unsigned jc = min((s0 + q) * BRAIN_WARP + lane, inputs - 1);
                    xb[q] = whole ? xs[q] : x[jc];
                    zb[q] = whole ? zs[q] : below_z[row + jc];
                    back[q] = 0.0f;
                }
                for (unsigned n = 0; n < k; ++n) {
                    const float dn = __shfl_sync(0xffffffffu, dl, n);
                    const float* wn = w + (brain_u64)n * inputs;
#pragma unroll
                    for (unsigned q = 0; q < BRAIN_FUSED_HEAD_STEPS; ++q)
                        back[q] += dn * wn[min((s0 + q) * BRAIN_WARP + lane, inputs - 1)];
                    float* sn = slice + n * (inputs + 1);
#pragma unroll
                    for (unsigned q = 0; q < BRAIN_FUSED_HEAD_STEPS; ++q) {
                        const unsigned j = (s0 + q) * BRAIN_WARP + lane;
                        if (j < inputs) sn[j] += dn * xb[q];
                    }
                }
                // xb is the row of below's activations.
                float* delta = below_delta + row + s0 * BRAIN_WARP + lane;
                const unsigned left = inputs - s0 * BRAIN_WARP;
                if (below_activation == BRAIN_ACT_RELU)
                    head_deltas<BRAIN_ACT_RELU>(delta, back, zb, xb, lane, left, below_activation, below_param);
                else
                    head_deltas<-1>(delta, back, zb, xb, lane, left, below_activation, below_param);
            }
            if (on) slice[lane * (inputs + 1) + inputs] += dl;
            loss_stamp(a, c.batch, 4, false);
        }
        if (on) {
            out_z[at + lane] = z;
            out_a[at + lane] = activated; // z's own buffer when the head is linear (the same value then)
            out_delta[at + lane] = dl;
        }
        if (lane == 0) row_loss[r] = total;
        loss_stamp(a, c.batch, 5, false);
    }
    if (below) {
        __syncthreads(); // every warp's slice is complete
        loss_stamp(a, c.batch, 6, false);
        if (blockIdx.x * BRAIN_FUSED_WARPS < rows) // the block had rows (warps take rows in order)
            for (unsigned e = threadIdx.x; e < width; e += BRAIN_FUSED_THREADS) {
                float sum = slices[e];
#pragma unroll
                for (unsigned q = 1; q < BRAIN_FUSED_WARPS; ++q) sum += slices[q * stride + e];
                a.head_partial[(brain_u64)blockIdx.x * width + e] = sum;
            }
    }
    loss_stamp(a, c.batch, 7, true);
}

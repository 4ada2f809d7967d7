// The fused epoch kernel: a whole epoch of a narrow network in one cooperative launch. Its products (tiles, a warp
// per output, their epilogues) are fused_gemm.cuh's (built from the layers in fused_products.cuh), its gradients
// summed in shares fused_shares.cuh's, its loss phase fused_head.cuh's; the math is dense_math.cuh's, the same code
// as the per-operation kernels'.
//
// Why: for small layers an optimizer step is a dozen tiny kernels, and even replayed from a CUDA graph each one
// costs a launch gap of a few microseconds, which is most of the step. Here every block of the grid (one per SM,
// all resident, which a cooperative launch guarantees) walks the same sequence of phases, separated by grid-wide
// barriers: per batch, one phase per layer forward, one for the loss (merged into the output layer's phase when
// that layer is narrow, and then the narrow layer's backward pass too where it fits: fused_output_and_loss; or,
// for a one-output head, spread over the phases beside it: BRAIN_FUSED_FOLDED_HEAD), one per layer backward
// (weight gradients and the next delta together; the optimizer update is fused into the last; layer 0's row shares
// add one). 2L - 2 to 2L + 2 barriers per step and no launch. Every output is computed by one thread or one warp in
// a fixed order, so results are deterministic.
#pragma once

#include "fused_head.cuh"

#define BRAIN_FUSED_STORED_BATCH 4
// The kernel's arguments stay in the parameter space while their address is taken (sm_70 and newer).
#if __CUDA_ARCH__ >= 700
#define BRAIN_GRID_CONSTANT __grid_constant__
#else
#define BRAIN_GRID_CONSTANT
#endif

// Grid-wide barrier over all blocks of a cooperative launch, as cooperative_groups' grid sync: one atomic per
// block on one word, block 0 adding 2^31 - (blocks - 1) and every other block 1, so that the word's top bit flips
// when the last block arrives and its low bits are back where they were (zero between launches). No reset and no
// second word, so the last arrival's atomic is the only step between it and the release of every waiting block.
//
// Memory order (sm_70 and newer): the arrival is a release at GPU scope, which orders before it every write this
// thread has observed, the block's included (__syncthreads orders them before thread 0's atomic); the wait is
// relaxed polls and then one acquire load of the word, which reads the last arrival's value or a later one, all of
// them atomics in the release sequence of every block's arrival, so it synchronizes with each. __syncthreads then
// extends the acquire to the block. Older GPUs take cooperative_groups' own form: __threadfence (a sequentially
// consistent fence) before the arrival and after the wait.
//
// word_barrier is the barrier's form for `count` blocks meeting on `word`, `first` true on exactly one of them
// (grid_barrier: the whole grid on the scalars' word; the cluster epoch kernel: a rank's blocks of every cluster).
static __device__ __forceinline__ void word_barrier(uint32_t* word, bool first, unsigned count) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const uint32_t add = first ? 0x80000000u - (count - 1) : 1u;
#if __CUDA_ARCH__ >= 700
        // Relaxed polls: an acquire load would invalidate the SM's L1 on every poll; one fence after the wait does
        // it once.
        uint32_t seen, now;
        asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;" : "=r"(seen) : "l"(word), "r"(add) : "memory");
        do {
            asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(now) : "l"(word) : "memory");
        } while (((seen ^ now) & 0x80000000u) == 0);
        // The acquire as one load of the word, which the polls have seen flip (cheaper than a fence).
        asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(now) : "l"(word) : "memory");
#else
        __threadfence();
        const uint32_t seen = atomicAdd(word, add);
        while (((seen ^ *(volatile uint32_t*)word) & 0x80000000u) == 0) {
        }
        __threadfence();
#endif
    }
    __syncthreads();
}

// The fused epoch kernel's barrier between phases, over every block of the grid.
static __device__ void grid_barrier(brain_cuda_scalars* s) {
    word_barrier(&s->barrier_arrived, blockIdx.x == 0, gridDim.x);
}

// The phase profile (a.profile, set only by test builds' profile hook, test_hooks.hpp): block 0 stamps the global
// timer after each barrier of batch 1 (slot 0: before it).
static __device__ __forceinline__ void profile_stamp(const brain_fused_epoch_args& a, brain_u64 batch,
                                                     unsigned& slot) {
    if (!a.profile || batch != 1 || blockIdx.x != 0) return;
    if (threadIdx.x == 0 && slot < BRAIN_FUSED_PROFILE_SLOTS) a.profile[slot] = global_timer();
    ++slot;
}

// The optimizer on parameters [i, end) with stride `stride` from their stored gradients, BRAIN_FUSED_STORED_BATCH
// at a time: all of a batch's loads ahead of its stores (which may alias them, so the compiler would not hoist
// the next parameter's loads above this one's stores), so that a thread waits once per batch.
static __device__ void fused_update_stored(const FusedContext& c, brain_u64 i, brain_u64 end, brain_u64 stride) {
    const brain_fused_epoch_args& a = *c.args;
    const bool sgd = a.optimizer == BRAIN_OPT_SGD;
    for (; i < end; i += BRAIN_FUSED_STORED_BATCH * stride) {
        float g[BRAIN_FUSED_STORED_BATCH], p[BRAIN_FUSED_STORED_BATCH], m[BRAIN_FUSED_STORED_BATCH],
            v[BRAIN_FUSED_STORED_BATCH];
#pragma unroll
        for (unsigned u = 0; u < BRAIN_FUSED_STORED_BATCH; ++u) {
            const brain_u64 j = min(i + u * stride, end - 1); // clamped: a repeated load, never stored
            g[u] = a.grads[j];
            p[u] = a.params[j];
            m[u] = a.state_m[j];
            v[u] = sgd ? 0.0f : a.state_v[j];
        }
#pragma unroll
        for (unsigned u = 0; u < BRAIN_FUSED_STORED_BATCH; ++u)
            if (i + u * stride < end) fused_update(c, i + u * stride, g[u], p[u], m[u], v[u]);
    }
}

// One block per SM (the grid the plugin launches), so each thread may have up to 255 registers. Left to itself
// ptxas takes ~246; BRAIN_FUSED_MAX_REGISTERS caps them where the compiler has __maxnreg__ (CUDA 12.4 and newer):
// 216 fits the same code without spills, and ptxas's schedule within it is faster (docs/performance.md); 0 leaves
// the count to ptxas, the only choice with an older toolkit.
#ifndef BRAIN_FUSED_MAX_REGISTERS
#if defined(__CUDACC_VER_MAJOR__) &&                                                                               \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define BRAIN_FUSED_MAX_REGISTERS 216
#else
#define BRAIN_FUSED_MAX_REGISTERS 0
#endif
#endif
#if BRAIN_FUSED_MAX_REGISTERS
#define BRAIN_FUSED_BOUNDS __maxnreg__(BRAIN_FUSED_MAX_REGISTERS)
#else
#define BRAIN_FUSED_BOUNDS __launch_bounds__(BRAIN_FUSED_THREADS, 1)
#endif
// The epoch, as brain_fused_epoch (SHARES, HEAD_ROWS and FOLD false), brain_fused_epoch_shares (SHARES: weight
// gradients in row shares where the plugin asks for them, row_share_layers), brain_fused_epoch_head_rows
// (HEAD_ROWS: a batch row per block in the loss phase, fused_head_by_block), brain_fused_epoch_folded (FOLD: a
// one-output head folded into the phases beside it, BRAIN_FUSED_FOLDED_HEAD) and brain_fused_epoch_folded_shares
// (SHARES and FOLD) run it. Kernels of their own, so that the code of each variant is not in the kernel of the
// sessions that never take it: in one kernel the row shares' code moves ptxas's schedule of every phase, which
// costs those sessions 4-6%, the row per block's 1-2.5%, the fold's 4.5-6.5% (docs/performance.md and
// docs/performance-grid.md).
template <bool SHARES, bool HEAD_ROWS, bool FOLD>
static __device__ __forceinline__ void fused_epoch(const brain_fused_epoch_args& args) {
    __shared__ __align__(16) TileShared sh;
    __shared__ float coefficients[3][BRAIN_FUSED_THREADS]; // per step: step_coefficients (the rate for SGD)
    // The batch's data-set rows, read once per step: the layer-0 GEMMs then index through shared memory instead
    // of making a dependent round trip to global memory per element.
    __shared__ uint32_t batch_rows[BRAIN_FUSED_MAX_BATCH];
#if BRAIN_FUSED_FOLDED_HEAD
    __shared__ float head_dl[BRAIN_FUSED_FOLD_ROWS]; // a folded head's dL/dz per batch row (fold_head_rows)
    unsigned fold_shares = 0;                        // the row slices of its gradient (fold_head_shares)
#endif
    // The shares fused_layer_gradient loads at once: fewer in the row-share kernels, whose registers spill at 16.
    constexpr unsigned loads = SHARES ? 8u : BRAIN_FUSED_GRADIENT_LOADS;
    brain_cuda_scalars* s = args.scalars;
    const unsigned layer_count = args.layer_count;
    // Read before any block can change them: block 0 writes both only after the epoch's last barrier.
    const brain_u64 epoch = s->epoch;
    const brain_u64 step0 = s->step;
    const brain_u64 thread = (brain_u64)blockIdx.x * blockDim.x + threadIdx.x;
    const brain_u64 threads = (brain_u64)gridDim.x * blockDim.x;
    const unsigned warp = blockIdx.x * BRAIN_FUSED_WARPS + threadIdx.x / BRAIN_WARP;
    const unsigned warps = gridDim.x * BRAIN_FUSED_WARPS;
    const unsigned lane = threadIdx.x % BRAIN_WARP;

    if (args.perm) {
        for (brain_u64 p = thread; p < args.rows; p += threads)
            args.perm[p] = (uint32_t)brain_shuffle_index(args.seed, epoch, args.rows, p);
        grid_barrier(s);
    }

    const brain_u64 batches = (args.rows + args.batch_size - 1) / args.batch_size;
    FusedContext c;
    c.args = &args;
    for (brain_u64 b = 0; b < batches; ++b) {
        const brain_u64 start = b * args.batch_size;
        const unsigned rows = (unsigned)min((brain_u64)args.batch_size, args.rows - start);
        c.batch = (int)b;
        unsigned slot = 0;
        if (args.profile && b == 1) { // two empty barriers: what a barrier alone costs
            profile_stamp(args, b, slot);
            grid_barrier(s);
            profile_stamp(args, b, slot);
            grid_barrier(s);
        }
        profile_stamp(args, b, slot);
        if (args.perm)
            for (unsigned r = threadIdx.x; r < rows; r += blockDim.x) batch_rows[r] = args.perm[start + r];
        // The optimizer's coefficients from each step's learning rate, every BRAIN_FUSED_THREADS steps (once per
        // epoch in the benchmark's configs): a step per thread, all at once, instead of one thread at each step's
        // start while the block waits.
        const unsigned entry = (unsigned)(b % BRAIN_FUSED_THREADS);
        if (entry == 0 && b + threadIdx.x < batches)
            step_coefficients(step0 + b + threadIdx.x + 1, args.rates[b + threadIdx.x], args.optimizer, args.beta1,
                              args.beta2, args.weight_decay, &coefficients[0][threadIdx.x],
                              &coefficients[1][threadIdx.x], &coefficients[2][threadIdx.x]);
        __syncthreads();
        c.step_size = coefficients[0][entry];
        c.bc2_sqrt = coefficients[1][entry];
        c.decay = coefficients[2][entry];

        // Forward, one phase per layer: z = input W^T + b, a = activation(z); then the loss (with a narrow output
        // layer, both in one phase; the profile then shows a loss phase of zero).
        const bool head = args.layers[layer_count - 1].outputs <= BRAIN_FUSED_HEAD_WIDTH;
        // The plugin sets head_partial only for a head of a network of two or more layers whose gradient fits a
        // warp's slice (BRAIN_FUSED_HEAD_SLICE).
        const bool head_backward = head && args.head_partial != nullptr;
        // A folded head (BRAIN_FUSED_FOLDED_HEAD): head_partial holds the head's dot-product shares (rows x
        // fold_tiles) and then its gradient's row slices, where both fit.
#if BRAIN_FUSED_FOLDED_HEAD
        const brain_fused_layer& out_layer = args.layers[layer_count - 1];
        const unsigned below_width = args.layers[layer_count > 1 ? layer_count - 2 : 0].outputs;
        const unsigned fold_tiles = (below_width + BRAIN_TILE - 1) / BRAIN_TILE;
        float* const fold_slices = args.head_partial + (brain_u64)BRAIN_FUSED_FOLD_ROWS * fold_tiles;
        // brain_fused_head_folds (device_scalars.h), written out: this form compiles to the measured code.
        const bool fold = FOLD && head_backward && layer_count >= 3 && out_layer.outputs == 1 &&
                          out_layer.activation != BRAIN_ACT_SOFTMAX &&
                          args.loss != BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY && rows <= BRAIN_FUSED_FOLD_ROWS &&
                          (brain_u64)rows * below_width > 2ull * gridDim.x * BRAIN_FUSED_WARPS &&
                          (brain_u64)BRAIN_FUSED_FOLD_ROWS * fold_tiles +
                                  (brain_u64)BRAIN_FUSED_FOLD_SHARES * (below_width + 1) <=
                              (brain_u64)gridDim.x * (below_width + 1);
#else
        const bool fold = false;
#endif
        for (unsigned l = 0; l < layer_count; ++l) {
            const brain_fused_layer& layer = args.layers[l];
            if (head && l + 1 == layer_count) {
                if (!fold) { // a folded head has no phase of its own (the profile shows it as zero)
                    fused_output_and_loss<HEAD_ROWS>(c, layer, layer_input(args, l, start, batch_rows), rows, start,
                                                     batch_rows, warp, warps, lane,
                                                     head_backward ? &args.layers[l - 1] : nullptr, sh.head, l > 0);
                    grid_barrier(s);
                }
                profile_stamp(args, b, slot);
                profile_stamp(args, b, slot);
                break;
            }
            FusedGemm g;
            g.a = layer_input(args, l, start, batch_rows);
            g.b.p = args.params + layer.weight_offset; // B(k, n) = W[n][k]
            g.b.index = nullptr;
            g.b.rs = 1;
            g.b.cs = layer.inputs;
            g.m = rows;
            g.n = layer.outputs;
            g.k = layer.inputs;
            g.layer = &layer;
            g.last = l + 1 == layer_count;
#if BRAIN_FUSED_FOLDED_HEAD
            if (fold && l + 2 == layer_count) { // the layer below a folded head
                g.head_w = args.params + out_layer.weight_offset;
                g.head_dots = args.head_partial;
                g.head_tiles = fold_tiles;
            }
#endif
            unsigned first = 0;
            // Narrow tiles neither with a folded head nor beside row shares: there their code spills.
            fused_gemm<FUSED_FORWARD, !FOLD && !SHARES>(c, g, first, sh, fused_phase_tile(g, g, false));
            // The loss phase's copy of the head's weights, queued to land while the block waits at the barrier
            // (nothing writes the weights in between).
            if (head && !fold && l + 2 == layer_count &&
                head_staged<HEAD_ROWS>(args.layers[l + 1], head_backward, rows)) {
                __syncthreads(); // the tiles' last reads of the shared memory it overwrites
                head_stage_weights(args, args.layers[l + 1],
                                   head_weights_copy<HEAD_ROWS>(sh.head, args.layers[l + 1], head_backward));
            }
            grid_barrier(s);
            profile_stamp(args, b, slot);
        }

        // The loss: one warp per row, as brain_output_loss.
        if (!head) {
            for (unsigned r = warp; r < rows; r += warps)
                fused_loss_row(args, args.layers[layer_count - 1], r, rows, start, batch_rows, lane);
            grid_barrier(s);
            profile_stamp(args, b, slot);
        }

        // Backward, one phase per layer from the top: dW and db of layer l and the delta of layer l - 1 (both read
        // W of layer l, so its update waits for the next phase); the last phase (layer 0) applies the optimizer to
        // layer 0 in its epilogues and to every other layer from the stored gradients.
        // With head_backward the head's phase is gone (the loss phase did its work; the profile shows it as zero)
        // and the first phase left adds up the head's gradient and updates it.
        const unsigned top = head_backward ? layer_count - 2 : layer_count - 1;
        // Layers whose weight gradient goes to row shares (fused_row_shares) in their backward phase, added up and
        // applied in the next one (layer 0's in a phase of its own after it): those the plugin picked, but not a
        // folded head's layer below (its delta is scaled where it is read).
        const unsigned shares = brain_fused_row_share_count(rows);
        const auto sliced = [&](unsigned l) {
            return SHARES && args.row_shares != nullptr && l <= top && ((args.row_share_layers >> l) & 1u) != 0 &&
                   !(fold && l == top);
        };
        for (unsigned l = layer_count; l-- > 0;) {
            if (l > top) {
                profile_stamp(args, b, slot); // a phase of zero
                continue;
            }
            const brain_fused_layer& layer = args.layers[l];
            const bool update = l == 0;
            FusedGemm dw = weight_gradient_gemm(args, l, rows, start, batch_rows, update);
            FusedGemm dx = delta_gemm(args, l > 0 ? l : 1u, rows); // a placeholder for layer 0 (not run)
            const bool in_shares = sliced(l);
            float* const share_buffer = row_share_buffer(args, l);
            // A layer in row shares keeps `shares` blocks busy instead of its weight gradient's warps or tiles.
            const unsigned tm =
                in_shares ? (fused_half_tile_blocks(dx) + shares <= gridDim.x ? BRAIN_TILE / 2 : BRAIN_TILE)
                          : fused_phase_tile(dw, dx, l > 0);
            dw.bias = !in_shares && fused_bias_in_tiles(dw, dx, l > 0, tm, (args.tile_flip_bias >> l) & 1u);
            // A folded head's first backward phase: every block works out the rows' dL/dz of the head (the last
            // block also the batch's loss), which scales this layer's delta wherever it is read.
#if BRAIN_FUSED_FOLDED_HEAD
            if (fold && l == top) {
                c.rows = rows;
                c.start = start;
                c.batch_rows = batch_rows;
                c.head_dots = args.head_partial;
                c.head_tiles = fold_tiles;
                c.head_dl = head_dl;
                dw.scale = head_dl;
                dx.scale = head_dl;
                fold_head_rows(c);
            }
#endif
            unsigned first = 0;
            if (in_shares) {
                fused_row_shares(layer, layer_input(args, l, start, batch_rows), rows, shares, first, share_buffer,
                                 sh);
                first = shares % gridDim.x;
            } else {
                fused_gemm<FUSED_WEIGHT_GRADIENT>(c, dw, first, sh, tm ^ fused_tile_flip(args.tile_flip_dw, l));
            }
            // Narrow tiles neither with a folded head nor beside row shares (above).
            if (l > 0)
                fused_gemm<FUSED_DELTA, !FOLD && !SHARES>(c, dx, first, sh,
                                                          tm ^ fused_tile_flip(args.tile_flip_dx, l));

            // db, unless the tiles or the row shares summed it: one warp per column, a fixed-order sum.
            const unsigned columns = dw.bias || in_shares ? 0u : layer.outputs;
            const unsigned bias_warp = (warp + warps - (first * BRAIN_FUSED_WARPS) % warps) % warps;
            for (unsigned j = bias_warp; j < columns; j += warps) {
                float sum = 0.0f;
#pragma unroll 4
                for (unsigned r = lane; r < rows; r += BRAIN_WARP) {
                    float d = layer.delta[(brain_u64)r * layer.outputs + j];
                    if (dw.scale) d *= dw.scale[r]; // a folded head's dL/dz of row r
                    sum += d;
                }
                sum = warp_sum(sum);
                if (lane == 0) fused_gradient(c, layer.bias_offset + j, sum, update);
            }
            // The head's gradient, then the batch's loss, each on the blocks past the phase's other work (a
            // block-wide sum ahead of a tile lengthens the phase by about a microsecond). A folded head's
            // gradient is computed here in row slices, on as many blocks as the phase leaves free (4 to
            // BRAIN_FUSED_FOLD_SHARES), and added up and applied in the next phase.
            unsigned next = first + (columns + BRAIN_FUSED_WARPS - 1) / BRAIN_FUSED_WARPS;
            // The layer above's row shares, from the phase before: added up and applied.
            unsigned share_blocks = 0;
            if (l < top && sliced(l + 1)) {
                const brain_fused_layer& above = args.layers[l + 1];
                fused_layer_gradient<loads>(c, above, next, shares, row_share_buffer(args, l + 1));
                share_blocks = fused_gradient_blocks(above);
                next += share_blocks;
            }
#if BRAIN_FUSED_FOLDED_HEAD
            if (fold && l == top) {
                const brain_u64 busy = fused_busy_blocks(dw, tm) + fused_busy_blocks(dx, tm) +
                                       (columns + BRAIN_FUSED_WARPS - 1) / BRAIN_FUSED_WARPS;
                const unsigned free = busy < gridDim.x ? gridDim.x - (unsigned)busy : 0u;
                fold_shares = min(min(max(free, 4u), (unsigned)BRAIN_FUSED_FOLD_SHARES), rows);
                fold_head_shares(c, next, fold_shares, fold_slices);
                next += fold_shares;
            }
#endif
            unsigned head_blocks = 0;
            if (head_backward && l + (fold ? 1 : 0) == top) {
#if BRAIN_FUSED_FOLDED_HEAD
                if (fold)
                    fused_head_gradient<loads>(c, next, fold_shares, fold_slices);
                else
#endif
                    fused_head_gradient<loads>(c, next, head_row_blocks<HEAD_ROWS>(rows), args.head_partial);
                head_blocks = fused_gradient_blocks(args.layers[layer_count - 1]);
                next += head_blocks;
            }
            if (!fold && l == top && blockIdx.x == next % gridDim.x) add_batch_loss(s, args.row_loss, rows, (int)b);

            // The head's parameters (last in the flat array) were updated by fused_head_gradient already.
            const brain_u64 stored_end =
                head_backward ? args.layers[layer_count - 1].weight_offset : args.parameter_count;
            if (update && layer_count > 1) {
                // On the blocks that have no tile, warp-per-output work or bias column in this phase (a tile takes
                // longer than the whole update on the rest), where they are at least a quarter of the grid.
                unsigned from = 0;
                const brain_u64 busy = (in_shares ? shares : fused_busy_blocks(dw, tm)) +
                                       (columns + BRAIN_FUSED_WARPS - 1) / BRAIN_FUSED_WARPS +
                                       (fold ? head_blocks : 0u) + share_blocks;
                if (4 * busy <= 3ull * gridDim.x) from = (unsigned)busy;
                if (blockIdx.x >= from) {
                    const brain_u64 offset = (brain_u64)(blockIdx.x - from) * blockDim.x + threadIdx.x;
                    const brain_u64 stride = (brain_u64)(gridDim.x - from) * blockDim.x;
                    if (SHARES) {
                        // Each run of consecutive layers not in row shares (those are applied by the phase after
                        // theirs) in one pass, so that a thread's loads stay batched across layers.
                        for (unsigned q = 1; q < layer_count;) {
                            unsigned end_layer = q;
                            while (end_layer < layer_count && !sliced(end_layer)) ++end_layer;
                            const brain_u64 begin = args.layers[q].weight_offset;
                            const brain_u64 end =
                                min(stored_end,
                                    end_layer < layer_count ? args.layers[end_layer].weight_offset : stored_end);
                            if (begin < end) fused_update_stored(c, begin + offset, end, stride);
                            q = end_layer + 1;
                        }
                    } else {
                        // The loop above would do the same in one run, but compiles to other code in this kernel,
                        // whose schedule is the measured one.
                        fused_update_stored(c, args.layers[1].weight_offset + offset, stored_end, stride);
                    }
                }
            }
            // Layer 0's row shares: the next step's first phase reads its weights, so they are added up and applied
            // in a phase of their own (its barrier in the profile's backward 0).
            if (update && in_shares) {
                grid_barrier(s);
                fused_layer_gradient<loads>(c, layer, 0, shares, share_buffer);
            }
            grid_barrier(s);
            profile_stamp(args, b, slot);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        finish_epoch(s, args.rows);
        s->step = step0 + batches;
    }
}

extern "C" __global__ void BRAIN_FUSED_BOUNDS
brain_fused_epoch(const BRAIN_GRID_CONSTANT brain_fused_epoch_args args) {
    fused_epoch<false, false, false>(args);
}
// BRAIN_FUSED_ROW_SHARES=0 builds it without row shares (test builds compare the two).
extern "C" __global__ void BRAIN_FUSED_BOUNDS
brain_fused_epoch_shares(const BRAIN_GRID_CONSTANT brain_fused_epoch_args args) {
    fused_epoch<BRAIN_FUSED_ROW_SHARES != 0, false, false>(args);
}
// The loss phase with a batch row per block (fused_head_by_block), for batches no longer than the grid: a
// kernel of its own, so that the code is not in the kernels of the sessions that never take it (in one kernel it
// moves ptxas's schedule of the other phases by 1-2.5%, docs/performance.md).
extern "C" __global__ void BRAIN_FUSED_BOUNDS
brain_fused_epoch_head_rows(const BRAIN_GRID_CONSTANT brain_fused_epoch_args args) {
    fused_epoch<false, true, false>(args);
}
// A one-output head folded into the phases beside it, with and without row shares: kernels of their own, so that
// the fold's code is not in the kernels of the sessions that never fold (in one kernel it moves ptxas's schedule of
// the other phases by 4.5-6.5%, docs/performance-grid.md).
extern "C" __global__ void BRAIN_FUSED_BOUNDS
brain_fused_epoch_folded(const BRAIN_GRID_CONSTANT brain_fused_epoch_args args) {
    fused_epoch<false, false, true>(args);
}
extern "C" __global__ void BRAIN_FUSED_BOUNDS
brain_fused_epoch_folded_shares(const BRAIN_GRID_CONSTANT brain_fused_epoch_args args) {
    fused_epoch<BRAIN_FUSED_ROW_SHARES != 0, false, true>(args);
}

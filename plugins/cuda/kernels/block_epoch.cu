// The block epoch kernel: a whole epoch of a small network on one block of one SM, with its parameters, the batch's
// rows, activations and deltas in the block's shared memory (brain_block_layout, device_scalars.h) for the whole
// launch. The optimizer state stays in global memory, each value loaded ahead of the product whose epilogue updates
// it.
//
// Why: on a small network the fused epoch kernel's steps are made of its grid barriers and of the round trips
// through L2 that every phase's operands take, not of arithmetic. One block needs neither: its layers are separated
// by __syncthreads and its operands never leave shared memory, so a step costs its multiply-adds at one SM's rate.
// The plugin takes it where that is the shorter step (fused_epoch.cpp, block_epoch_pays).
//
// Each product runs as micro-tiles of R x R outputs (R = 4, or 2 for a product too small to give every thread a
// 4 x 4 tile), a tile's rows and columns strided over the product so that a warp's loads fall on distinct banks,
// every output summed by one thread in a fixed order: results are deterministic. Biases ride along as a column of
// ones after each layer's input rows and a last column of W, so the forward product adds b and the weight
// gradient's product yields db. Backward, the weight gradient of layer l runs beside the delta of layer l - 2
// (three delta buffers), each layer's optimizer update in its gradient's epilogue.
#pragma once

#include "fused_epoch.cu" // dense_math.cuh, cp.async copies (tile_copy), BRAIN_GRID_CONSTANT

#define BRAIN_BLOCK_THREADS 512
#define BRAIN_BLOCK_WARPS (BRAIN_BLOCK_THREADS / BRAIN_WARP)

enum BlockProductKind { BLOCK_FORWARD, BLOCK_DELTA, BLOCK_WEIGHT_GRADIENT };

// C(m, n) = sum over k of X(m, k) Y(k, n) on shared memory: X(m, k) = x[m xm + k xk], Y(k, n) = y[k yk + n yn],
// then the kind's epilogue on every output.
struct BlockProduct {
    const float* x;
    const float* y;
    unsigned xm, xk, yk, yn;
    unsigned m, n, k;
    unsigned r;      // micro-tile size: 4 or 2
    unsigned gm, gn; // micro-tiles down and across: m / r and n / r, rounded up
    // Epilogue operands. Forward: z (null: not kept) and a, pitch `pitch` (the output layer: z alone). Delta: the
    // layer below's delta out, pitch `pitch`, its z and a (pitch `below_pitch`). Weight gradient: W in shared
    // memory (pitch `pitch`, b in column `n - 1`) and the parameters' global offsets.
    float* out;
    float* z;
    const float* below_z;
    const float* below_a;
    unsigned pitch, below_pitch;
    int activation;
    float param;
    bool last;
    brain_u64 weight_offset, bias_offset;
};

// What every product's epilogue needs of the step.
struct BlockStep {
    const brain_fused_epoch_args* args;
    int batch;
    float step_size;
    float bc2_sqrt;
    float decay;
};

// The step and the stage's products, in shared memory: block_tile runs out of line (inlined, its accumulators and
// prefetched optimizer state pass the 128 registers that 512 threads leave each, and spill), and what it reads
// through a reference must not live in local memory, which the small L1 beside a large shared memory does not hold.
struct BlockShared {
    BlockStep step;
    BlockProduct products[2];
};

static __device__ __forceinline__ unsigned block_tiles(const BlockProduct& p) {
    return p.gm * p.gn;
}

// Fills the micro-tile grid of p: 4 x 4 tiles, or 2 x 2 where 4 x 4 would leave most threads without one.
static __device__ __forceinline__ void block_shape(BlockProduct& p) {
    const unsigned g4 = ((p.m + 3) / 4) * ((p.n + 3) / 4);
    p.r = 4 * g4 >= BRAIN_BLOCK_THREADS ? 4u : 2u;
    p.gm = (p.m + p.r - 1) / p.r;
    p.gn = (p.n + p.r - 1) / p.r;
}

// Micro-tile t of p: rows tm + i gm and columns tn + j gn (i, j < R), so that the lanes of a warp, which take
// consecutive tn, read consecutive columns of Y.
template <unsigned R, int KIND>
static __device__ __noinline__ void block_tile(const BlockStep& c, const BlockProduct& p, unsigned t) {
    const brain_fused_epoch_args& a = *c.args;
    const unsigned tm = t / p.gn, tn = t % p.gn;
    unsigned rows[R], cols[R], xo[R], yo[R];
#pragma unroll
    for (unsigned i = 0; i < R; ++i) {
        rows[i] = tm + i * p.gm;
        cols[i] = tn + i * p.gn;
        xo[i] = min(rows[i], p.m - 1) * p.xm;
        yo[i] = min(cols[i], p.n - 1) * p.yn;
    }
    // The optimizer state of the tile's parameters, loaded ahead of the product so that its latency hides behind
    // it.
    float ms[R][R], vs[R][R];
    if (KIND == BLOCK_WEIGHT_GRADIENT) {
#pragma unroll
        for (unsigned i = 0; i < R; ++i)
#pragma unroll
            for (unsigned j = 0; j < R; ++j) {
                const bool on = rows[i] < p.m && cols[j] < p.n;
                const brain_u64 g = cols[j] + 1 < p.n ? p.weight_offset + (brain_u64)rows[i] * (p.n - 1) + cols[j]
                                                      : p.bias_offset + rows[i];
                ms[i][j] = on ? a.state_m[g] : 0.0f;
                vs[i][j] = on && a.state_v ? a.state_v[g] : 0.0f;
            }
    }
    float acc[R][R];
#pragma unroll
    for (unsigned i = 0; i < R; ++i)
#pragma unroll
        for (unsigned j = 0; j < R; ++j) acc[i][j] = 0.0f;
    const float* x = p.x;
    const float* y = p.y;
#pragma unroll 2
    for (unsigned k = 0; k < p.k; ++k) {
        float xv[R], yv[R];
#pragma unroll
        for (unsigned i = 0; i < R; ++i) {
            xv[i] = x[xo[i]];
            yv[i] = y[yo[i]];
        }
#pragma unroll
        for (unsigned i = 0; i < R; ++i)
#pragma unroll
            for (unsigned j = 0; j < R; ++j) acc[i][j] = fmaf(xv[i], yv[j], acc[i][j]);
        x += p.xk;
        y += p.yk;
    }
#pragma unroll
    for (unsigned i = 0; i < R; ++i)
#pragma unroll
        for (unsigned j = 0; j < R; ++j) {
            const unsigned m = rows[i], n = cols[j];
            if (m >= p.m || n >= p.n) continue;
            const float v = acc[i][j];
            if (KIND == BLOCK_FORWARD) {
                const unsigned at = m * p.pitch + n;
                if (p.last) {
                    p.z[at] = v;
                } else {
                    if (p.z) p.z[at] = v;
                    p.out[at] = brain_activate(p.activation, v, p.param);
                }
            } else if (KIND == BLOCK_DELTA) {
                const unsigned at = m * p.below_pitch + n;
                const float below_a = p.below_a[at];
                const float below_z = p.below_z ? p.below_z[at] : below_a;
                p.out[m * p.pitch + n] = v * brain_derivative(p.activation, below_z, below_a, p.param);
            } else {
                const brain_u64 g =
                    n + 1 < p.n ? p.weight_offset + (brain_u64)m * (p.n - 1) + n : p.bias_offset + m;
                float* w = p.out + m * p.pitch + n;
                float mom = ms[i][j], var = vs[i][j], value;
                if (a.optimizer == BRAIN_OPT_SGD) {
                    value = sgd_value(*w, v, mom, c.step_size, a.momentum);
                } else {
                    value =
                        adam_value(*w, v, mom, var, a.beta1, a.beta2, a.epsilon, c.step_size, c.bc2_sqrt, c.decay);
                    a.state_v[g] = var;
                }
                a.state_m[g] = mom;
                *w = value;
                if (!isfinite(value)) atomicMin(&a.scalars->bad_weight_batch, c.batch);
            }
        }
}

template <int KIND>
static __device__ __forceinline__ void block_tile_any(const BlockStep& c, const BlockProduct& p, unsigned t) {
    if (p.r == 4)
        block_tile<4, KIND>(c, p, t);
    else
        block_tile<2, KIND>(c, p, t);
}

// One stage: the tiles of `first` and then, with `two`, of `second` spread over the block's threads, then a block
// barrier. The products go to shared memory first (sh.products: the barrier before the stage's tiles).
template <int FIRST, int SECOND>
static __device__ __forceinline__ void block_stage(BlockShared& sh, const BlockProduct& first,
                                                   const BlockProduct& second, bool two) {
    if (threadIdx.x == 0) {
        sh.products[0] = first;
        if (two) sh.products[1] = second;
    }
    __syncthreads();
    const unsigned a = block_tiles(first), total = a + (two ? block_tiles(second) : 0u);
    for (unsigned t = threadIdx.x; t < total; t += BRAIN_BLOCK_THREADS) {
        if (t < a)
            block_tile_any<FIRST>(sh.step, sh.products[0], t);
        else
            block_tile_any<SECOND>(sh.step, sh.products[1], t - a);
    }
    __syncthreads();
}

// Layer l's input rows in shared memory, with the column of ones after them, and their pitch.
static __device__ __forceinline__ const float* block_input(const brain_block_layout& s, const float* smem,
                                                           const brain_fused_epoch_args& a, unsigned l,
                                                           unsigned buffer, unsigned& pitch) {
    if (l == 0) {
        pitch = brain_block_pitch(a.layers[0].inputs);
        return smem + s.inputs[buffer];
    }
    pitch = brain_block_pitch(a.layers[l - 1].outputs);
    return smem + s.acts[l - 1];
}

// Layer l's weight gradient with its optimizer update: G(j, i) = sum over rows of delta(r, j) input(r, i), i up to
// the ones column (db).
static __device__ BlockProduct block_weight_gradient(const brain_block_layout& s, float* smem,
                                                     const brain_fused_epoch_args& a, unsigned l, unsigned rows,
                                                     unsigned buffer) {
    const brain_fused_layer& layer = a.layers[l];
    BlockProduct p = {};
    unsigned input_pitch;
    p.x = smem + s.deltas[l % 3];
    p.xm = 1;
    p.xk = s.delta_pitch;
    p.y = block_input(s, smem, a, l, buffer, input_pitch);
    p.yk = input_pitch;
    p.yn = 1;
    p.m = layer.outputs;
    p.n = layer.inputs + 1;
    p.k = rows;
    p.out = smem + s.weights[l];
    p.pitch = brain_block_pitch(layer.inputs);
    p.weight_offset = layer.weight_offset;
    p.bias_offset = layer.bias_offset;
    block_shape(p);
    return p;
}

// Layer l's delta product (l >= 1): delta(l - 1) = (delta(l) W) times the derivative of layer l - 1.
static __device__ BlockProduct block_delta(const brain_block_layout& s, float* smem,
                                           const brain_fused_epoch_args& a, unsigned l, unsigned rows) {
    const brain_fused_layer& layer = a.layers[l];
    const brain_fused_layer& below = a.layers[l - 1];
    BlockProduct p = {};
    p.x = smem + s.deltas[l % 3];
    p.xm = s.delta_pitch;
    p.xk = 1;
    p.y = smem + s.weights[l];
    p.yk = brain_block_pitch(layer.inputs);
    p.yn = 1;
    p.m = rows;
    p.n = layer.inputs;
    p.k = layer.outputs;
    p.out = smem + s.deltas[(l - 1) % 3];
    p.pitch = s.delta_pitch;
    p.below_a = smem + s.acts[l - 1];
    p.below_z = s.zs[l - 1] != s.acts[l - 1] ? smem + s.zs[l - 1] : nullptr;
    p.below_pitch = brain_block_pitch(below.outputs);
    p.activation = below.activation;
    p.param = below.param;
    block_shape(p);
    return p;
}

// Copies the batch's input and target rows for step `batch_index` into buffer `buffer` (cp.async, committed).
static __device__ void block_copy_rows(const brain_block_layout& s, float* smem, const brain_fused_epoch_args& a,
                                       const uint32_t* batch_rows, unsigned rows, unsigned buffer) {
    const unsigned inputs = a.layers[0].inputs, pitch = brain_block_pitch(inputs);
    const unsigned outputs = a.layers[a.layer_count - 1].outputs;
    float* x = smem + s.inputs[buffer];
    float* t = smem + s.targets[buffer];
    for (unsigned e = threadIdx.x; e < rows * inputs; e += BRAIN_BLOCK_THREADS) {
        const unsigned r = e / inputs, i = e - r * inputs;
        tile_copy(x + r * pitch + i, a.features + (brain_u64)batch_rows[r] * inputs + i, true);
    }
    for (unsigned e = threadIdx.x; e < rows * outputs; e += BRAIN_BLOCK_THREADS) {
        const unsigned r = e / outputs, i = e - r * outputs;
        tile_copy(t + r * outputs + i, a.targets + (brain_u64)batch_rows[r] * outputs + i, true);
    }
    tile_commit();
}

extern "C" __global__ void __launch_bounds__(BRAIN_BLOCK_THREADS, 1)
    brain_block_epoch(const BRAIN_GRID_CONSTANT brain_fused_epoch_args args) {
    extern __shared__ __align__(16) float smem[];
    __shared__ brain_block_layout s;
    __shared__ float coefficients[3][BRAIN_BLOCK_THREADS];
    __shared__ uint32_t batch_rows[2][BRAIN_FUSED_MAX_BATCH];
    __shared__ double epoch_loss;
    const brain_fused_epoch_args& a = args;
    brain_cuda_scalars* scalars = a.scalars;
    const unsigned layer_count = a.layer_count;
    const brain_u64 epoch = scalars->epoch;
    const brain_u64 step0 = scalars->step;
    if (threadIdx.x == 0) {
        brain_block_plan(a.layers, layer_count, a.batch_size, &s);
        epoch_loss = 0.0;
    }
    __syncthreads();

    // The parameters into shared memory, each layer's b after its W's row; the columns of ones after every
    // layer's input rows (the products never write them).
    for (unsigned l = 0; l < layer_count; ++l) {
        const brain_fused_layer& layer = a.layers[l];
        const unsigned n = layer.inputs + 1, pitch = brain_block_pitch(layer.inputs);
        for (unsigned e = threadIdx.x; e < layer.outputs * n; e += BRAIN_BLOCK_THREADS) {
            const unsigned j = e / n, i = e - j * n;
            smem[s.weights[l] + j * pitch + i] =
                i < layer.inputs ? a.params[layer.weight_offset + (brain_u64)j * layer.inputs + i]
                                 : a.params[layer.bias_offset + j];
        }
        if (l + 1 < layer_count)
            for (unsigned r = threadIdx.x; r < a.batch_size; r += BRAIN_BLOCK_THREADS)
                smem[s.acts[l] + r * brain_block_pitch(layer.outputs) + layer.outputs] = 1.0f;
    }
    const unsigned input_pitch = brain_block_pitch(a.layers[0].inputs);
    for (unsigned r = threadIdx.x; r < 2 * a.batch_size; r += BRAIN_BLOCK_THREADS)
        smem[s.inputs[r & 1] + (r >> 1) * input_pitch + a.layers[0].inputs] = 1.0f;

    const brain_u64 batches = (a.rows + a.batch_size - 1) / a.batch_size;
    // batch_rows[q][r]: the data-set row of position r of the step whose buffers are q.
    const auto order = [&](brain_u64 b) {
        const brain_u64 start = b * a.batch_size;
        const unsigned rows = (unsigned)min((brain_u64)a.batch_size, a.rows - start);
        for (unsigned r = threadIdx.x; r < rows; r += BRAIN_BLOCK_THREADS)
            batch_rows[b & 1][r] =
                a.perm ? (uint32_t)brain_shuffle_index(a.seed, epoch, a.rows, start + r) : (uint32_t)(start + r);
        return rows;
    };
    const unsigned first_rows = order(0);
    __syncthreads();
    block_copy_rows(s, smem, a, batch_rows[0], first_rows, 0);

    __shared__ BlockShared sh;
    const brain_fused_layer& out = a.layers[layer_count - 1];
    for (brain_u64 b = 0; b < batches; ++b) {
        const unsigned buffer = (unsigned)(b & 1);
        const unsigned rows = (unsigned)min((brain_u64)a.batch_size, a.rows - b * a.batch_size);
        const unsigned next_rows = b + 1 < batches ? order(b + 1) : 0u;
        const unsigned entry = (unsigned)(b % BRAIN_BLOCK_THREADS);
        if (entry == 0 && b + threadIdx.x < batches)
            step_coefficients(step0 + b + threadIdx.x + 1, a.rates[b + threadIdx.x], a.optimizer, a.beta1, a.beta2,
                              a.weight_decay, &coefficients[0][threadIdx.x], &coefficients[1][threadIdx.x],
                              &coefficients[2][threadIdx.x]);
        tile_wait<0>();
        __syncthreads();
        if (threadIdx.x == 0) { // read by the tiles after the first stage's barrier
            sh.step.args = &args;
            sh.step.batch = (int)b;
            sh.step.step_size = coefficients[0][entry];
            sh.step.bc2_sqrt = coefficients[1][entry];
            sh.step.decay = coefficients[2][entry];
        }
        // The next step's rows are copied while this one trains (its buffers were last read by the step before).
        if (next_rows) block_copy_rows(s, smem, a, batch_rows[buffer ^ 1u], next_rows, buffer ^ 1u);

        // Forward.
        for (unsigned l = 0; l < layer_count; ++l) {
            const brain_fused_layer& layer = a.layers[l];
            BlockProduct p = {};
            unsigned pitch;
            p.x = block_input(s, smem, a, l, buffer, pitch);
            p.xm = pitch;
            p.xk = 1;
            p.y = smem + s.weights[l];
            p.yk = 1;
            p.yn = brain_block_pitch(layer.inputs);
            p.m = rows;
            p.n = layer.outputs;
            p.k = layer.inputs + 1;
            p.last = l + 1 == layer_count;
            p.pitch = p.last ? layer.outputs : brain_block_pitch(layer.outputs);
            p.out = smem + s.acts[l];
            p.z = p.last || s.zs[l] != s.acts[l] ? smem + s.zs[l] : nullptr;
            p.activation = layer.activation;
            p.param = layer.param;
            block_shape(p);
            block_stage<BLOCK_FORWARD, BLOCK_FORWARD>(sh, p, p, false);
        }

        // The loss, a warp per row, as brain_output_loss: the output layer's activation, the row's loss, dL/dz.
        float* const row_loss = smem + s.row_loss;
        {
            const unsigned k = out.outputs;
            const unsigned warp = threadIdx.x / BRAIN_WARP, lane = threadIdx.x % BRAIN_WARP;
            for (unsigned r = warp; r < rows; r += BRAIN_BLOCK_WARPS) {
                const float total = output_loss_row(
                    smem + s.zs[layer_count - 1] + r * k, smem + s.acts[layer_count - 1] + r * k,
                    smem + s.deltas[(layer_count - 1) % 3] + r * s.delta_pitch, smem + s.targets[buffer] + r * k,
                    rows, k, out.activation, out.param, a.loss, lane);
                if (lane == 0) row_loss[r] = total;
            }
            __syncthreads();
        }
        // The batch's loss, by the last warp beside the first backward stage (a fixed-order sum in double, as
        // add_batch_loss).
        const auto batch_loss = [&] {
            if (threadIdx.x / BRAIN_WARP != BRAIN_BLOCK_WARPS - 1) return;
            const unsigned lane = threadIdx.x % BRAIN_WARP;
            double v = 0.0;
            for (unsigned r = lane; r < rows; r += BRAIN_WARP) v += (double)row_loss[r];
            v = warp_sum_d(v);
            if (lane == 0) {
                if (!isfinite(v) && scalars->bad_loss_batch == BRAIN_CUDA_NO_BAD_BATCH)
                    scalars->bad_loss_batch = (int)b;
                epoch_loss += v * (double)rows;
            }
        };

        // Backward: delta(L - 2) alone; then the weight gradient of layer l beside the delta of layer l - 2; the
        // last stage the weight gradients of layers 1 and 0.
        const unsigned top = layer_count - 1;
        if (top >= 1) {
            batch_loss();
            const BlockProduct d = block_delta(s, smem, a, top, rows);
            block_stage<BLOCK_DELTA, BLOCK_DELTA>(sh, d, d, false);
        } else {
            batch_loss();
        }
        for (unsigned l = top; l-- > 0;) {
            // This stage: the weight gradient of layer l + 1, and the delta of layer l - 1 (from layer l's), or,
            // at l = 0, the weight gradient of layer 0.
            const BlockProduct wg = block_weight_gradient(s, smem, a, l + 1, rows, buffer);
            if (l > 0) {
                const BlockProduct d = block_delta(s, smem, a, l, rows);
                block_stage<BLOCK_WEIGHT_GRADIENT, BLOCK_DELTA>(sh, wg, d, true);
            } else {
                const BlockProduct w0 = block_weight_gradient(s, smem, a, 0, rows, buffer);
                block_stage<BLOCK_WEIGHT_GRADIENT, BLOCK_WEIGHT_GRADIENT>(sh, wg, w0, true);
            }
        }
        if (top == 0) {
            const BlockProduct w0 = block_weight_gradient(s, smem, a, 0, rows, buffer);
            block_stage<BLOCK_WEIGHT_GRADIENT, BLOCK_WEIGHT_GRADIENT>(sh, w0, w0, false);
        }
    }

    // The parameters back to global memory, then the epoch's loss.
    for (unsigned l = 0; l < layer_count; ++l) {
        const brain_fused_layer& layer = a.layers[l];
        const unsigned n = layer.inputs + 1, pitch = brain_block_pitch(layer.inputs);
        for (unsigned e = threadIdx.x; e < layer.outputs * n; e += BRAIN_BLOCK_THREADS) {
            const unsigned j = e / n, i = e - j * n;
            const float v = smem[s.weights[l] + j * pitch + i];
            if (i < layer.inputs)
                a.params[layer.weight_offset + (brain_u64)j * layer.inputs + i] = v;
            else
                a.params[layer.bias_offset + j] = v;
        }
    }
    if (threadIdx.x == 0) {
        scalars->epoch_loss_sum += epoch_loss;
        finish_epoch(scalars, a.rows);
        scalars->step = step0 + batches;
    }
}

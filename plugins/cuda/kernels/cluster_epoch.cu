// The cluster epoch kernel: a whole epoch of a small network on one cluster of thread blocks (sm_90 and newer).
// Every block keeps all the parameters in its shared memory (brain_cluster_layout, device_scalars.h) and takes a
// slice of each batch's rows through every layer, forward and backward, on its own; only the weight gradient needs
// the whole batch. Each block sums its rows' share of every layer's gradient into its shared memory; after a
// cluster barrier, block c adds up the blocks' shares of its part of the parameters (read from their shared
// memory), applies the optimizer to that part (whose state it keeps) and writes the new values into every block's
// copy; a second cluster barrier ends the step.
//
// Long batches run on several clusters (brain_cluster_exchange, device_scalars.h), each taking its own rows: block
// c of each cluster writes its cluster's sums of its part of the parameters to global memory, the blocks of rank c
// meet at a barrier of their own (word_barrier; the launch is cooperative, so every cluster is resident), and each
// adds the clusters' sums in cluster order before the optimizer, so that every cluster makes the same update.
//
// Why: on a small network the fused epoch kernel's steps are made of its grid barriers and of the round trips
// through L2 that every phase's operands take, not of arithmetic, and one block alone multiplies at one SM's rate.
// A cluster's blocks reach each other's shared memory directly and meet at a hardware barrier: two of them per
// step, whatever the depth, and no operand goes through L2 but the batch's rows.
//
// Each product runs as micro-tiles of R x R outputs (R = 4, 2 or 1, the largest that still gives every thread a
// tile), a tile's rows and columns strided over the product so that a warp's loads fall on distinct banks, every
// output summed by one thread in a fixed order, and the blocks' shares added in block order: results are
// deterministic. Biases ride along as a column of ones after each layer's input rows and a last column of W, so the
// forward product adds b and the gradient's product yields db. Backward, the gradient of layer l runs beside the
// delta of layer l - 2 (three delta buffers).
#pragma once

#include "fused_epoch.cu" // dense_math.cuh, cp.async copies (tile_copy), BRAIN_GRID_CONSTANT

#ifndef BRAIN_CLUSTER_THREADS // the host reads it back from the kernel's attributes
#define BRAIN_CLUSTER_THREADS 512
#endif
#define BRAIN_CLUSTER_WARPS (BRAIN_CLUSTER_THREADS / BRAIN_WARP)

#if __CUDA_ARCH__ >= 900

// This block's rank in its cluster.
static __device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// Cluster-wide barrier: every write a thread of the cluster made before it (to any block's shared memory) is
// visible to every thread of the cluster after it.
static __device__ __forceinline__ void cluster_barrier() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The address, in the cluster's shared window, of `local` (this block's shared memory) in block `rank`.
static __device__ __forceinline__ unsigned cluster_address(const void* local, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                 : "=r"(r)
                 : "r"((unsigned)__cvta_generic_to_shared(local)), "r"(rank));
    return r;
}

static __device__ __forceinline__ float cluster_load(unsigned address) {
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(address) : "memory");
    return v;
}

static __device__ __forceinline__ double cluster_load_double(unsigned address) {
    double v;
    asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(v) : "r"(address) : "memory");
    return v;
}

static __device__ __forceinline__ void cluster_store(unsigned address, float v) {
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(address), "f"(v) : "memory");
}

enum ClusterProductKind { CLUSTER_FORWARD, CLUSTER_DELTA, CLUSTER_GRADIENT };

// C(m, n) = sum over k of X(m, k) Y(k, n) on shared memory: X(m, k) = x[m xm + k xk], Y(k, n) = y[k yk + n yn],
// then the kind's epilogue on every output: forward, z (null: not kept) and a = activation(z), pitch `pitch` (the
// output layer: z alone); delta, the layer below's delta out, pitch `pitch`, times the derivative from its z and a
// (pitch `below_pitch`); gradient, C itself into `out`, pitch `pitch`.
struct ClusterProduct {
    const float* x;
    const float* y;
    unsigned xm, xk, yk, yn;
    unsigned m, n, k;
    unsigned r;      // micro-tile size: 4, 2 or 1
    unsigned gm, gn; // micro-tiles down and across: m / r and n / r, rounded up
    float* out;
    float* z;
    const float* below_z;
    const float* below_a;
    unsigned pitch, below_pitch;
    int activation;
    float param;
    bool last;
};

// The stage's products, in shared memory: thread 0 describes them, every thread reads them after the barrier.
struct ClusterShared {
    ClusterProduct products[2];
};

static __device__ __forceinline__ unsigned cluster_tiles(const ClusterProduct& p) {
    return p.gm * p.gn;
}

// Fills the micro-tile grid of p: the largest tiles that still give every thread one.
static __device__ __forceinline__ void cluster_shape(ClusterProduct& p) {
    const unsigned g4 = ((p.m + 3) / 4) * ((p.n + 3) / 4), g2 = ((p.m + 1) / 2) * ((p.n + 1) / 2);
    p.r = g4 >= BRAIN_CLUSTER_THREADS ? 4u : g2 >= BRAIN_CLUSTER_THREADS ? 2u : 1u;
    p.gm = (p.m + p.r - 1) / p.r;
    p.gn = (p.n + p.r - 1) / p.r;
}

// Output (m, n) of p, its sum v: the kind's epilogue.
template <int KIND>
static __device__ __forceinline__ void cluster_epilogue(const ClusterProduct& p, unsigned m, unsigned n, float v) {
    if (KIND == CLUSTER_FORWARD) {
        const unsigned at = m * p.pitch + n;
        if (p.last) {
            p.z[at] = v;
        } else {
            if (p.z) p.z[at] = v;
            p.out[at] = brain_activate(p.activation, v, p.param);
        }
    } else if (KIND == CLUSTER_DELTA) {
        const unsigned at = m * p.below_pitch + n;
        const float below_a = p.below_a[at];
        const float below_z = p.below_z ? p.below_z[at] : below_a;
        p.out[m * p.pitch + n] = v * brain_derivative(p.activation, below_z, below_a, p.param);
    } else {
        p.out[m * p.pitch + n] = v;
    }
}

// Micro-tile t of p: rows tm + i gm and columns tn + j gn (i, j < R), so that the lanes of a warp, which take
// consecutive tn, read consecutive columns of Y.
template <unsigned R, int KIND>
static __device__ __forceinline__ void cluster_tile(const ClusterProduct& p, unsigned t) {
    const unsigned tm = t / p.gn, tn = t % p.gn;
    unsigned rows[R], cols[R], xo[R], yo[R];
#pragma unroll
    for (unsigned i = 0; i < R; ++i) {
        rows[i] = tm + i * p.gm;
        cols[i] = tn + i * p.gn;
        xo[i] = min(rows[i], p.m - 1) * p.xm;
        yo[i] = min(cols[i], p.n - 1) * p.yn;
    }
    float acc[R][R];
#pragma unroll
    for (unsigned i = 0; i < R; ++i)
#pragma unroll
        for (unsigned j = 0; j < R; ++j) acc[i][j] = 0.0f;
    const float* x = p.x;
    const float* y = p.y;
#pragma unroll 4
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
        for (unsigned j = 0; j < R; ++j)
            if (rows[i] < p.m && cols[j] < p.n) cluster_epilogue<KIND>(p, rows[i], cols[j], acc[i][j]);
}

template <int KIND>
static __device__ __forceinline__ void cluster_tile_any(const ClusterProduct& p, unsigned t) {
    if (p.r == 4)
        cluster_tile<4, KIND>(p, t);
    else if (p.r == 2)
        cluster_tile<2, KIND>(p, t);
    else
        cluster_tile<1, KIND>(p, t);
}

// One stage: the tiles of `first` and then, with `two`, of `second` spread over the block's threads, then a block
// barrier. The products go to shared memory first (the barrier before the stage's tiles).
template <int FIRST, int SECOND>
static __device__ __forceinline__ void cluster_stage(ClusterShared& sh, const ClusterProduct& first,
                                                     const ClusterProduct& second, bool two) {
    if (threadIdx.x == 0) {
        sh.products[0] = first;
        if (two) sh.products[1] = second;
    }
    __syncthreads();
    const unsigned a = cluster_tiles(first), total = a + (two ? cluster_tiles(second) : 0u);
    for (unsigned t = threadIdx.x; t < total; t += BRAIN_CLUSTER_THREADS) {
        if (t < a)
            cluster_tile_any<FIRST>(sh.products[0], t);
        else
            cluster_tile_any<SECOND>(sh.products[1], t - a);
    }
    __syncthreads();
}

// Layer l's input rows in shared memory, with the column of ones after them, and their pitch.
static __device__ __forceinline__ const float* cluster_input(const brain_cluster_layout& s, const float* smem,
                                                             const brain_fused_epoch_args& a, unsigned l,
                                                             unsigned buffer, unsigned& pitch) {
    if (l == 0) {
        pitch = brain_cluster_pitch(a.layers[0].inputs);
        return smem + s.inputs[buffer];
    }
    pitch = brain_cluster_pitch(a.layers[l - 1].outputs);
    return smem + s.acts[l - 1];
}

// The slice's share of layer l's gradient: G(j, i) = sum over the slice's rows of delta(r, j) input(r, i), i up to
// the ones column (db).
static __device__ ClusterProduct cluster_gradient(const brain_cluster_layout& s, float* smem, float* grads,
                                                  const brain_fused_epoch_args& a, unsigned l, unsigned rows,
                                                  unsigned buffer) {
    const brain_fused_layer& layer = a.layers[l];
    ClusterProduct p = {};
    unsigned input_pitch;
    p.x = smem + s.deltas[l % 3];
    p.xm = 1;
    p.xk = s.delta_pitch;
    p.y = cluster_input(s, smem, a, l, buffer, input_pitch);
    p.yk = input_pitch;
    p.yn = 1;
    p.m = layer.outputs;
    p.n = layer.inputs + 1;
    p.k = rows;
    p.out = grads + s.grads[l];
    p.pitch = brain_cluster_pitch(layer.inputs);
    cluster_shape(p);
    return p;
}

// Layer l's delta product (l >= 1): delta(l - 1) = (delta(l) W) times the derivative of layer l - 1.
static __device__ ClusterProduct cluster_delta(const brain_cluster_layout& s, float* smem,
                                               const brain_fused_epoch_args& a, unsigned l, unsigned rows) {
    const brain_fused_layer& layer = a.layers[l];
    const brain_fused_layer& below = a.layers[l - 1];
    ClusterProduct p = {};
    p.x = smem + s.deltas[l % 3];
    p.xm = s.delta_pitch;
    p.xk = 1;
    p.y = smem + s.weights[l];
    p.yk = brain_cluster_pitch(layer.inputs);
    p.yn = 1;
    p.m = rows;
    p.n = layer.inputs;
    p.k = layer.outputs;
    p.out = smem + s.deltas[(l - 1) % 3];
    p.pitch = s.delta_pitch;
    p.below_a = smem + s.acts[l - 1];
    p.below_z = s.zs[l - 1] != s.acts[l - 1] ? smem + s.zs[l - 1] : nullptr;
    p.below_pitch = brain_cluster_pitch(below.outputs);
    p.activation = below.activation;
    p.param = below.param;
    cluster_shape(p);
    return p;
}

// Copies the slice's input and target rows into buffer `buffer` (cp.async, committed; `rows` may be 0).
static __device__ void cluster_copy_rows(const brain_cluster_layout& s, float* smem,
                                         const brain_fused_epoch_args& a, const uint32_t* batch_rows, unsigned rows,
                                         unsigned buffer) {
    const unsigned inputs = a.layers[0].inputs, pitch = brain_cluster_pitch(inputs);
    const unsigned outputs = a.layers[a.layer_count - 1].outputs;
    float* x = smem + s.inputs[buffer];
    float* t = smem + s.targets[buffer];
    for (unsigned e = threadIdx.x; e < rows * inputs; e += BRAIN_CLUSTER_THREADS) {
        const unsigned r = e / inputs, i = e - r * inputs;
        tile_copy(x + r * pitch + i, a.features + (brain_u64)batch_rows[r] * inputs + i, true);
    }
    for (unsigned e = threadIdx.x; e < rows * outputs; e += BRAIN_CLUSTER_THREADS) {
        const unsigned r = e / outputs, i = e - r * outputs;
        tile_copy(t + r * outputs + i, a.targets + (brain_u64)batch_rows[r] * outputs + i, true);
    }
    tile_commit();
}

// Parameter q (layer l's: W's row j then b[j]) as its layer, its offset in the shared layout and in the global
// parameter vector.
static __device__ __forceinline__ void cluster_parameter(const brain_cluster_layout& s,
                                                         const brain_fused_epoch_args& a, unsigned q, unsigned& at,
                                                         brain_u64& global) {
    unsigned l = 0;
    while (q >= s.first[l + 1]) ++l;
    const brain_fused_layer& layer = a.layers[l];
    const unsigned e = q - s.first[l], j = e / (layer.inputs + 1), i = e - j * (layer.inputs + 1);
    at = s.weights[l] + j * brain_cluster_pitch(layer.inputs) + i;
    global = i < layer.inputs ? layer.weight_offset + (brain_u64)j * layer.inputs + i : layer.bias_offset + j;
}

#endif // __CUDA_ARCH__ >= 900

extern "C" __global__ void __launch_bounds__(BRAIN_CLUSTER_THREADS, 1)
    brain_cluster_epoch(const BRAIN_GRID_CONSTANT brain_fused_epoch_args args, const unsigned blocks,
                        const brain_cluster_exchange exchange) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) float smem[];
    __shared__ brain_cluster_layout s;
    __shared__ float coefficients[3][BRAIN_CLUSTER_THREADS];
    __shared__ uint32_t batch_rows[2][BRAIN_FUSED_MAX_BATCH];
    __shared__ double slice_loss; // the slice's share of the step's loss, read by block 0
    __shared__ ClusterShared sh;
    const brain_fused_epoch_args& a = args;
    brain_cuda_scalars* scalars = a.scalars;
    const unsigned layer_count = a.layer_count;
    const unsigned rank = cluster_rank();
    const unsigned clusters = exchange.clusters, cluster = blockIdx.x / blocks;
    const brain_u64 epoch = scalars->epoch;
    const brain_u64 step0 = scalars->step;
    if (threadIdx.x == 0)
        brain_cluster_plan(a.layers, layer_count, a.batch_size, blocks, clusters, exchange.grads != nullptr, &s);
    __syncthreads();
    const unsigned slice = s.slice, share = s.share, params = s.first[layer_count];
    const unsigned q0 = min(rank * share, params), q1 = min(q0 + share, params);
    const bool adam = a.optimizer != BRAIN_OPT_SGD;
    float* const state_m = smem + s.state;
    float* const state_v = state_m + share;
    // Where this block sums its gradient share: its shared memory, or its region of the exchange's grads (networks
    // whose parameters fit a block's shared memory once but not twice), read back through L2.
    float* const grads = s.grads_global ? exchange.grads + (brain_u64)blockIdx.x * s.grad_floats : smem;
    const float* const cluster_grads =
        s.grads_global ? exchange.grads + (brain_u64)cluster * blocks * s.grad_floats : nullptr;

    // The parameters into shared memory, each layer's b after its W's row; this block's share of the optimizer
    // state; the columns of ones after every layer's input rows (the products never write them).
    for (unsigned l = 0; l < layer_count; ++l) {
        const brain_fused_layer& layer = a.layers[l];
        const unsigned n = layer.inputs + 1, pitch = brain_cluster_pitch(layer.inputs);
        for (unsigned e = threadIdx.x; e < layer.outputs * n; e += BRAIN_CLUSTER_THREADS) {
            const unsigned j = e / n, i = e - j * n;
            smem[s.weights[l] + j * pitch + i] =
                i < layer.inputs ? a.params[layer.weight_offset + (brain_u64)j * layer.inputs + i]
                                 : a.params[layer.bias_offset + j];
        }
        if (l + 1 < layer_count)
            for (unsigned r = threadIdx.x; r < slice; r += BRAIN_CLUSTER_THREADS)
                smem[s.acts[l] + r * brain_cluster_pitch(layer.outputs) + layer.outputs] = 1.0f;
    }
    // Each parameter's place in the layout, worked out once, and where each block's copy of the parameters and
    // of its gradient share start in the cluster's shared window (the same layout in every block).
    uint32_t* const slots = reinterpret_cast<uint32_t*>(smem + s.slots);
    __shared__ unsigned remote_params[BRAIN_CLUSTER_MAX_BLOCKS], remote_grads[BRAIN_CLUSTER_MAX_BLOCKS];
    for (unsigned q = q0 + threadIdx.x; q < q1; q += BRAIN_CLUSTER_THREADS) {
        unsigned at;
        brain_u64 g;
        cluster_parameter(s, a, q, at, g);
        slots[q - q0] = at;
        state_m[q - q0] = a.state_m[g];
        if (adam) state_v[q - q0] = a.state_v[g];
    }
    if (threadIdx.x < blocks) {
        remote_params[threadIdx.x] = cluster_address(smem, threadIdx.x);
        remote_grads[threadIdx.x] = cluster_address(smem + s.grads[0], threadIdx.x);
    }
    const unsigned input_pitch = brain_cluster_pitch(a.layers[0].inputs);
    for (unsigned r = threadIdx.x; r < 2 * slice; r += BRAIN_CLUSTER_THREADS)
        smem[s.inputs[r & 1] + (r >> 1) * input_pitch + a.layers[0].inputs] = 1.0f;

    const brain_u64 batches = (a.rows + a.batch_size - 1) / a.batch_size;
    // batch_rows[q][r]: the data-set row of the slice's position r in the step whose buffers are q; returns the
    // slice's rows (0 where the batch is short of it) and sets `total` to the batch's.
    const auto order = [&](brain_u64 b, unsigned& total) {
        const brain_u64 start = b * a.batch_size;
        total = (unsigned)min((brain_u64)a.batch_size, a.rows - start);
        const unsigned from = min((cluster * blocks + rank) * slice, total), rows = min(from + slice, total) - from;
        for (unsigned r = threadIdx.x; r < rows; r += BRAIN_CLUSTER_THREADS)
            batch_rows[b & 1][r] = a.perm ? (uint32_t)brain_shuffle_index(a.seed, epoch, a.rows, start + from + r)
                                          : (uint32_t)(start + from + r);
        return rows;
    };
    unsigned batch_total = 0;
    const unsigned first_rows = order(0, batch_total);
    __syncthreads();
    cluster_copy_rows(s, smem, a, batch_rows[0], first_rows, 0);

    const brain_fused_layer& out = a.layers[layer_count - 1];
    double epoch_loss = 0.0; // the cluster's, on its block 0's thread 0
    unsigned rows = first_rows;
    for (brain_u64 b = 0; b < batches; ++b) {
        const unsigned buffer = (unsigned)(b & 1);
        const unsigned total = batch_total;
        unsigned next_rows = 0;
        if (b + 1 < batches) next_rows = order(b + 1, batch_total);
        const unsigned entry = (unsigned)(b % BRAIN_CLUSTER_THREADS);
        if (entry == 0 && b + threadIdx.x < batches)
            step_coefficients(step0 + b + threadIdx.x + 1, a.rates[b + threadIdx.x], a.optimizer, a.beta1, a.beta2,
                              a.weight_decay, &coefficients[0][threadIdx.x], &coefficients[1][threadIdx.x],
                              &coefficients[2][threadIdx.x]);
        tile_wait<0>();
        __syncthreads();
        unsigned slot = 0; // the profile's (test builds), on block 0 of the cluster
        const auto stamp = [&] {
            if (a.profile && b == 1 && blockIdx.x == 0 && threadIdx.x == 0) a.profile[slot] = global_timer();
            ++slot;
        };
        stamp();
        // The next step's rows are copied while this one trains (its buffers were last read by the step before).
        cluster_copy_rows(s, smem, a, batch_rows[buffer ^ 1u], next_rows, buffer ^ 1u);

        // Forward, on the slice's rows.
        for (unsigned l = 0; l < layer_count && rows; ++l) {
            const brain_fused_layer& layer = a.layers[l];
            ClusterProduct p = {};
            unsigned pitch;
            p.x = cluster_input(s, smem, a, l, buffer, pitch);
            p.xm = pitch;
            p.xk = 1;
            p.y = smem + s.weights[l];
            p.yk = 1;
            p.yn = brain_cluster_pitch(layer.inputs);
            p.m = rows;
            p.n = layer.outputs;
            p.k = layer.inputs + 1;
            p.last = l + 1 == layer_count;
            p.pitch = p.last ? layer.outputs : brain_cluster_pitch(layer.outputs);
            p.out = smem + s.acts[l];
            p.z = p.last || s.zs[l] != s.acts[l] ? smem + s.zs[l] : nullptr;
            p.activation = layer.activation;
            p.param = layer.param;
            cluster_shape(p);
            cluster_stage<CLUSTER_FORWARD, CLUSTER_FORWARD>(sh, p, p, false);
        }
        stamp();

        // The loss, a warp per row, as brain_output_loss (scaled by the whole batch's rows): the output layer's
        // activation, the row's loss, dL/dz.
        float* const row_loss = smem + s.row_loss;
        {
            const unsigned k = out.outputs;
            const unsigned warp = threadIdx.x / BRAIN_WARP, lane = threadIdx.x % BRAIN_WARP;
            for (unsigned r = warp; r < rows; r += BRAIN_CLUSTER_WARPS) {
                const float value = output_loss_row(
                    smem + s.zs[layer_count - 1] + r * k, smem + s.acts[layer_count - 1] + r * k,
                    smem + s.deltas[(layer_count - 1) % 3] + r * s.delta_pitch, smem + s.targets[buffer] + r * k,
                    total, k, out.activation, out.param, a.loss, lane);
                if (lane == 0) row_loss[r] = value;
            }
            __syncthreads();
        }
        stamp();
        // The slice's loss, by the last warp beside the first backward stage (a fixed-order sum in double).
        const auto sum_slice_loss = [&] {
            if (threadIdx.x / BRAIN_WARP != BRAIN_CLUSTER_WARPS - 1) return;
            const unsigned lane = threadIdx.x % BRAIN_WARP;
            double v = 0.0;
            for (unsigned r = lane; r < rows; r += BRAIN_WARP) v += (double)row_loss[r];
            v = warp_sum_d(v);
            if (lane == 0) slice_loss = v;
        };

        // Backward: delta(L - 2) alone; then the gradient of layer l beside the delta of layer l - 2; the last
        // stage the gradients of layers 1 and 0. A block without rows sums zero rows: its shares are zeros.
        const unsigned top = layer_count - 1;
        sum_slice_loss();
        if (top >= 1 && rows) {
            const ClusterProduct d = cluster_delta(s, smem, a, top, rows);
            cluster_stage<CLUSTER_DELTA, CLUSTER_DELTA>(sh, d, d, false);
        }
        for (unsigned l = top; l-- > 0;) {
            const ClusterProduct g = cluster_gradient(s, smem, grads, a, l + 1, rows, buffer);
            if (l > 0 && rows) {
                const ClusterProduct d = cluster_delta(s, smem, a, l, rows);
                cluster_stage<CLUSTER_GRADIENT, CLUSTER_DELTA>(sh, g, d, true);
            } else if (l > 0) {
                cluster_stage<CLUSTER_GRADIENT, CLUSTER_GRADIENT>(sh, g, g, false);
            } else {
                const ClusterProduct g0 = cluster_gradient(s, smem, grads, a, 0, rows, buffer);
                cluster_stage<CLUSTER_GRADIENT, CLUSTER_GRADIENT>(sh, g, g0, true);
            }
        }
        if (top == 0) {
            const ClusterProduct g0 = cluster_gradient(s, smem, grads, a, 0, rows, buffer);
            cluster_stage<CLUSTER_GRADIENT, CLUSTER_GRADIENT>(sh, g0, g0, false);
        }
        stamp();
        cluster_barrier();
        stamp();

        // Block c's share of the parameters: the blocks' gradient shares added in block order (then, on several
        // clusters, the clusters' sums in cluster order), the optimizer, the new value into every block's copy.
        {
            const float step_size = coefficients[0][entry], bc2_sqrt = coefficients[1][entry],
                        decay = coefficients[2][entry];
            const auto cluster_sum = [&](unsigned bytes) {
                float parts[BRAIN_CLUSTER_MAX_BLOCKS];
                if (cluster_grads) {
                    // .cg: another block's share, which this SM's L1 may hold from an earlier step.
#pragma unroll
                    for (unsigned c = 0; c < BRAIN_CLUSTER_MAX_BLOCKS; ++c)
                        parts[c] =
                            c < blocks ? __ldcg(cluster_grads + (brain_u64)c * s.grad_floats + bytes / 4) : 0.0f;
                } else {
#pragma unroll
                    for (unsigned c = 0; c < BRAIN_CLUSTER_MAX_BLOCKS; ++c)
                        parts[c] = c < blocks ? cluster_load(remote_grads[c] + bytes) : 0.0f;
                }
                float g = parts[0];
#pragma unroll
                for (unsigned c = 1; c < BRAIN_CLUSTER_MAX_BLOCKS; ++c)
                    if (c < blocks) g += parts[c];
                return g;
            };
            const auto update = [&](unsigned q, unsigned at, float g) {
                float mom = state_m[q - q0], var = adam ? state_v[q - q0] : 0.0f, value;
                if (!adam) {
                    value = sgd_value(smem[at], g, mom, step_size, a.momentum);
                } else {
                    value =
                        adam_value(smem[at], g, mom, var, a.beta1, a.beta2, a.epsilon, step_size, bc2_sqrt, decay);
                    state_v[q - q0] = var;
                }
                state_m[q - q0] = mom;
                const unsigned bytes = 4 * at;
                for (unsigned c = 0; c < blocks; ++c) cluster_store(remote_params[c] + bytes, value);
                if (!isfinite(value)) atomicMin(&scalars->bad_weight_batch, (int)b);
            };
            if (clusters == 1) {
                for (unsigned q = q0 + threadIdx.x; q < q1; q += BRAIN_CLUSTER_THREADS) {
                    const unsigned at = slots[q - q0];
                    update(q, at, cluster_sum(4 * at));
                }
            } else {
                // Through L2 (.cg): the sums of the step two before this one may still sit in this SM's L1.
                float* const sums = exchange.sums + (brain_u64)(b & 1) * clusters * params;
                for (unsigned q = q0 + threadIdx.x; q < q1; q += BRAIN_CLUSTER_THREADS)
                    __stcg(sums + (brain_u64)cluster * params + q, cluster_sum(4 * slots[q - q0]));
                word_barrier(exchange.words + rank, cluster == 0, clusters);
                for (unsigned q = q0 + threadIdx.x; q < q1; q += BRAIN_CLUSTER_THREADS) {
                    float g = __ldcg(sums + q);
                    for (unsigned c = 1; c < clusters; ++c) g += __ldcg(sums + (brain_u64)c * params + q);
                    update(q, slots[q - q0], g);
                }
            }
            // The step's loss, on block 0: the slices' sums in block order.
            if (rank == 0 && threadIdx.x == 0) {
                double v = 0.0;
                for (unsigned c = 0; c < blocks; ++c) v += cluster_load_double(cluster_address(&slice_loss, c));
                if (!isfinite(v)) atomicMin(&scalars->bad_loss_batch, (int)b);
                epoch_loss += v * (double)total;
            }
        }
        if (a.profile && b == 1) __syncthreads();
        stamp();
        cluster_barrier();
        stamp();
        rows = next_rows;
    }

    // This block's share of the parameters and of their optimizer state back to global memory (from the first
    // cluster: every cluster holds the same), then (block 0) the epoch's loss: the clusters' sums in cluster order.
    for (unsigned q = q0 + threadIdx.x; q < q1 && cluster == 0; q += BRAIN_CLUSTER_THREADS) {
        unsigned at;
        brain_u64 g;
        cluster_parameter(s, a, q, at, g);
        a.params[g] = smem[at];
        a.state_m[g] = state_m[q - q0];
        if (adam) a.state_v[g] = state_v[q - q0];
    }
    if (rank == 0 && clusters > 1) {
        if (threadIdx.x == 0) __stcg(exchange.losses + cluster, epoch_loss);
        word_barrier(exchange.words, cluster == 0, clusters);
        if (cluster == 0 && threadIdx.x == 0) {
            epoch_loss = __ldcg(exchange.losses);
            for (unsigned c = 1; c < clusters; ++c) epoch_loss += __ldcg(exchange.losses + c);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        scalars->epoch_loss_sum += epoch_loss;
        finish_epoch(scalars, a.rows);
        scalars->step = step0 + batches;
    }
#endif
}

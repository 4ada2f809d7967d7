// The sharded epoch kernel: a whole epoch of a network too large for every block of a cluster to hold (the cluster
// epoch kernel's case) on one cluster of thread blocks (sm_90 and newer). Block c holds its share of every hidden
// layer's outputs: W's rows and b of outputs [n c / blocks, n (c + 1) / blocks), their activations for the whole
// batch and their optimizer state; every block holds the whole output layer (brain_sharded_layout,
// device_scalars.h).
//
// A step: each hidden layer forward, every block gathers the layer's input rows from the blocks that hold them
// (through the cluster's shared window) and computes its outputs for the whole batch; a cluster barrier. Every
// block computes the output layer, the loss and the output layer's gradient for the whole batch, applies its
// optimizer to its own copy (the same arithmetic on the same values in every block, so the copies stay equal) and
// the delta of its share of the layer below. Each hidden layer backward, every block gathers the layer's input rows
// again, the layer's whole delta and the columns of W that multiply its share of the inputs, computes the gradient
// of its rows and the delta of its share of the layer below; a cluster barrier, after which no block reads this
// layer's W any more, and the block applies the optimizer to its rows.
//
// Why: on a deep network of narrow layers the fused epoch kernel's steps are made of its 2L + 1 grid barriers and
// the round trips through L2 that every phase's operands take; a cluster's blocks meet at a hardware barrier and
// read each other's shared memory directly: 2L - 2 cluster barriers per step, and nothing but the batch's rows and
// the hidden layers' optimizer state comes through L2.
//
// Products run as the cluster kernel's micro-tiles (cluster_stage), every output summed by one thread in a fixed
// order: results are deterministic.
#pragma once

#include "cluster_epoch.cu"

#if __CUDA_ARCH__ >= 900

// The block among `blocks` that holds output j of a layer of n outputs (brain_shard_first's inverse).
static __device__ __forceinline__ unsigned shard_owner(unsigned n, unsigned j, unsigned blocks) {
    return ((j + 1) * blocks - 1) / n;
}

// Eight loads from the cluster's shared window, all in flight before the first result is used.
static __device__ __forceinline__ void cluster_load8(const unsigned (&address)[8], float (&v)[8]) {
    asm volatile("ld.shared::cluster.f32 %0, [%8];\n\t"
                 "ld.shared::cluster.f32 %1, [%9];\n\t"
                 "ld.shared::cluster.f32 %2, [%10];\n\t"
                 "ld.shared::cluster.f32 %3, [%11];\n\t"
                 "ld.shared::cluster.f32 %4, [%12];\n\t"
                 "ld.shared::cluster.f32 %5, [%13];\n\t"
                 "ld.shared::cluster.f32 %6, [%14];\n\t"
                 "ld.shared::cluster.f32 %7, [%15];"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]), "=f"(v[4]), "=f"(v[5]), "=f"(v[6]), "=f"(v[7])
                 : "r"(address[0]), "r"(address[1]), "r"(address[2]), "r"(address[3]), "r"(address[4]),
                   "r"(address[5]), "r"(address[6]), "r"(address[7])
                 : "memory");
}

// A matrix from the blocks' shared memory as `lines` lines of `length` elements: element i of line q is at
// base(q) + i step in the cluster's shared window and goes to dst[q line_stride + i element_stride]. Each thread
// keeps to one line (working out its base once) and takes every g-th element of it, g threads to a line; eight
// loads in flight per thread.
template <typename Base>
static __device__ __forceinline__ void shard_gather(float* dst, unsigned line_stride, unsigned element_stride,
                                                    unsigned lines, unsigned length, unsigned step, Base base) {
    const bool many = lines >= BRAIN_CLUSTER_THREADS;
    const unsigned g = many ? 1u : BRAIN_CLUSTER_THREADS / lines;
    const unsigned i0 = many ? 0u : threadIdx.x / lines;
    if (i0 >= g || length == 0) return;
    for (unsigned q = many ? threadIdx.x : threadIdx.x % lines; q < lines;
         q += many ? BRAIN_CLUSTER_THREADS : lines) {
        const unsigned from = base(q);
        float* const out = dst + q * line_stride;
        for (unsigned i = i0; i < length; i += 8 * g) {
            unsigned address[8];
            float v[8];
#pragma unroll
            for (unsigned u = 0; u < 8; ++u) address[u] = from + step * min(i + u * g, length - 1);
            cluster_load8(address, v);
#pragma unroll
            for (unsigned u = 0; u < 8; ++u)
                if (i + u * g < length) out[(i + u * g) * element_stride] = v[u];
        }
    }
}

// The batch's `rows` rows of a hidden layer's values of `width` outputs, each block's share at offset `at` of its
// layout with pitch `spitch`, into dst (pitch dpitch); with `ones`, a column of ones after them.
static __device__ __forceinline__ void shard_gather_columns(float* dst, unsigned dpitch, unsigned at,
                                                            unsigned spitch, unsigned rows, unsigned width,
                                                            unsigned blocks, const unsigned* remote, bool ones) {
    shard_gather(dst, 1, dpitch, width, rows, 4 * spitch, [&](unsigned j) {
        const unsigned d = shard_owner(width, j, blocks);
        return remote[d] + 4 * (at + j - brain_shard_first(width, d, blocks));
    });
    if (ones)
        for (unsigned r = threadIdx.x; r < rows; r += BRAIN_CLUSTER_THREADS) dst[r * dpitch + width] = 1.0f;
}

// Columns [first, first + count) of hidden layer l's W (all its rows, each block's at its weights[l]) into dst
// (pitch dpitch).
static __device__ __forceinline__ void
shard_gather_weights(float* dst, unsigned dpitch, const brain_sharded_layout& s, const brain_fused_layer& layer,
                     unsigned l, unsigned first, unsigned count, unsigned blocks, const unsigned* remote) {
    const unsigned n = layer.outputs, pitch = brain_cluster_pitch(layer.inputs);
    shard_gather(dst, dpitch, 1, n, count, 4, [&](unsigned o) {
        const unsigned d = shard_owner(n, o, blocks);
        return remote[d] + 4 * (s.weights[l] + (o - brain_shard_first(n, d, blocks)) * pitch + first);
    });
}

// Copies the batch's input and target rows into buffer `buffer` (cp.async, committed; `rows` may be 0).
static __device__ void shard_copy_rows(const brain_sharded_layout& s, float* smem, const brain_fused_epoch_args& a,
                                       const uint32_t* batch_rows, unsigned rows, unsigned buffer) {
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

// Layer l's parameter (j, i) of the block's rows (i = inputs: b[j]): its place in the global parameter vector.
static __device__ __forceinline__ brain_u64 shard_global(const brain_fused_layer& layer, unsigned j, unsigned i) {
    return i < layer.inputs ? layer.weight_offset + (brain_u64)j * layer.inputs + i : layer.bias_offset + j;
}

#endif // __CUDA_ARCH__ >= 900

extern "C" __global__ void __launch_bounds__(BRAIN_CLUSTER_THREADS, 1)
    brain_sharded_epoch(const BRAIN_GRID_CONSTANT brain_fused_epoch_args args, const unsigned blocks) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) float smem[];
    __shared__ brain_sharded_layout s;
    __shared__ float coefficients[3][BRAIN_CLUSTER_THREADS];
    __shared__ uint32_t batch_rows[2][BRAIN_FUSED_MAX_BATCH];
    __shared__ ClusterShared sh;
    __shared__ unsigned remote[BRAIN_CLUSTER_MAX_BLOCKS];
    const brain_fused_epoch_args& a = args;
    brain_cuda_scalars* scalars = a.scalars;
    const unsigned top = a.layer_count - 1;
    const unsigned rank = cluster_rank();
    const brain_u64 epoch = scalars->epoch;
    const brain_u64 step0 = scalars->step;
    if (threadIdx.x == 0) brain_sharded_plan(a.layers, a.layer_count, a.batch_size, blocks, &s);
    if (threadIdx.x < blocks) remote[threadIdx.x] = cluster_address(smem, threadIdx.x);
    __syncthreads();
    const bool adam = a.optimizer != BRAIN_OPT_SGD;
    const brain_fused_layer& head = a.layers[top];
    const unsigned head_n = head.inputs + 1, head_pitch = brain_cluster_pitch(head.inputs);
    // The block's share of hidden layer l: its first output and how many.
    const auto first_of = [&](unsigned l) { return brain_shard_first(a.layers[l].outputs, rank, blocks); };
    const auto count_of = [&](unsigned l) {
        return brain_shard_first(a.layers[l].outputs, rank + 1, blocks) - first_of(l);
    };

    // The block's rows of every hidden layer and the whole output layer, each b after its W's row; the output
    // layer's optimizer state; the columns of ones after the input rows (the copies never write them).
    for (unsigned l = 0; l <= top; ++l) {
        const brain_fused_layer& layer = a.layers[l];
        const unsigned n = layer.inputs + 1, pitch = brain_cluster_pitch(layer.inputs);
        const unsigned first = l < top ? first_of(l) : 0u, count = l < top ? count_of(l) : layer.outputs;
        for (unsigned e = threadIdx.x; e < count * n; e += BRAIN_CLUSTER_THREADS) {
            const unsigned j = e / n, i = e - j * n;
            const brain_u64 g = shard_global(layer, first + j, i);
            smem[s.weights[l] + j * pitch + i] = a.params[g];
            if (l == top) {
                smem[s.head_m + j * pitch + i] = a.state_m[g];
                if (adam) smem[s.head_v + j * pitch + i] = a.state_v[g];
            }
        }
    }
    const unsigned input_pitch = brain_cluster_pitch(a.layers[0].inputs);
    for (unsigned r = threadIdx.x; r < 2 * a.batch_size; r += BRAIN_CLUSTER_THREADS)
        smem[s.inputs[r & 1] + (r >> 1) * input_pitch + a.layers[0].inputs] = 1.0f;

    const brain_u64 batches = (a.rows + a.batch_size - 1) / a.batch_size;
    // batch_rows[b & 1]: the data-set rows of batch b; returns how many.
    const auto order = [&](brain_u64 b) {
        const brain_u64 start = b * a.batch_size;
        const unsigned rows = (unsigned)min((brain_u64)a.batch_size, a.rows - start);
        for (unsigned r = threadIdx.x; r < rows; r += BRAIN_CLUSTER_THREADS)
            batch_rows[b & 1][r] =
                a.perm ? (uint32_t)brain_shuffle_index(a.seed, epoch, a.rows, start + r) : (uint32_t)(start + r);
        return rows;
    };
    unsigned rows = order(0);
    __syncthreads();
    shard_copy_rows(s, smem, a, batch_rows[0], rows, 0);

    float* const stage = smem + s.stage;
    float* const grad = smem + s.grad;
    // The batches' losses add up on block 0's last warp, its first lane.
    const unsigned loss_thread = (BRAIN_CLUSTER_WARPS - 1) * BRAIN_WARP;
    double epoch_loss = 0.0;
    for (brain_u64 b = 0; b < batches; ++b) {
        const unsigned buffer = (unsigned)(b & 1);
        const unsigned next_rows = b + 1 < batches ? order(b + 1) : 0u;
        const unsigned entry = (unsigned)(b % BRAIN_CLUSTER_THREADS);
        if (entry == 0 && b + threadIdx.x < batches)
            step_coefficients(step0 + b + threadIdx.x + 1, a.rates[b + threadIdx.x], a.optimizer, a.beta1, a.beta2,
                              a.weight_decay, &coefficients[0][threadIdx.x], &coefficients[1][threadIdx.x],
                              &coefficients[2][threadIdx.x]);
        tile_wait<0>();
        __syncthreads();
        const float step_size = coefficients[0][entry], bc2_sqrt = coefficients[1][entry],
                    decay = coefficients[2][entry];
        // The next step's rows are copied while this one trains (its buffers were last read by the step before).
        shard_copy_rows(s, smem, a, batch_rows[buffer ^ 1u], next_rows, buffer ^ 1u);
        const float* const inputs = smem + s.inputs[buffer];

        // Forward: each hidden layer's outputs of the block's share, for the whole batch.
        for (unsigned l = 0; l < top; ++l) {
            const brain_fused_layer& layer = a.layers[l];
            const unsigned pitch = brain_cluster_pitch(layer.inputs);
            if (l > 0) {
                shard_gather_columns(stage, pitch, s.acts[l - 1], s.slice_pitch[l - 1], rows, layer.inputs, blocks,
                                     remote, true);
                __syncthreads();
            }
            ClusterProduct p = {};
            p.x = l > 0 ? stage : inputs;
            p.xm = pitch;
            p.xk = 1;
            p.y = smem + s.weights[l];
            p.yk = 1;
            p.yn = pitch;
            p.m = rows;
            p.n = count_of(l);
            p.k = layer.inputs + 1;
            p.pitch = s.slice_pitch[l];
            p.out = smem + s.acts[l];
            p.z = s.zs[l] != s.acts[l] ? smem + s.zs[l] : nullptr;
            p.activation = layer.activation;
            p.param = layer.param;
            cluster_shape(p);
            cluster_stage<CLUSTER_FORWARD, CLUSTER_FORWARD>(sh, p, p, false);
            cluster_barrier();
        }

        // The output layer on every block, for the whole batch.
        shard_gather_columns(stage, head_pitch, s.acts[top - 1], s.slice_pitch[top - 1], rows, head.inputs, blocks,
                             remote, true);
        __syncthreads();
        {
            ClusterProduct p = {};
            p.x = stage;
            p.xm = head_pitch;
            p.xk = 1;
            p.y = smem + s.weights[top];
            p.yk = 1;
            p.yn = head_pitch;
            p.m = rows;
            p.n = head.outputs;
            p.k = head_n;
            p.last = true;
            p.pitch = head.outputs;
            p.z = smem + s.head_z;
            cluster_shape(p);
            cluster_stage<CLUSTER_FORWARD, CLUSTER_FORWARD>(sh, p, p, false);
        }
        // The loss, a warp per row, as brain_output_loss (scaled by the batch's rows).
        float* const row_loss = smem + s.row_loss;
        {
            const unsigned k = head.outputs, warp = threadIdx.x / BRAIN_WARP, lane = threadIdx.x % BRAIN_WARP;
            for (unsigned r = warp; r < rows; r += BRAIN_CLUSTER_WARPS) {
                const float value = output_loss_row(smem + s.head_z + r * k, smem + s.head_a + r * k,
                                                    smem + s.head_delta + r * k, smem + s.targets[buffer] + r * k,
                                                    rows, k, head.activation, head.param, a.loss, lane);
                if (lane == 0) row_loss[r] = value;
            }
            __syncthreads();
        }
        // The batch's loss, on block 0 by its last warp (a fixed-order sum in double), beside the next stage.
        if (rank == 0 && threadIdx.x / BRAIN_WARP == BRAIN_CLUSTER_WARPS - 1) {
            const unsigned lane = threadIdx.x % BRAIN_WARP;
            double v = 0.0;
            for (unsigned r = lane; r < rows; r += BRAIN_WARP) v += (double)row_loss[r];
            v = warp_sum_d(v);
            if (lane == 0) {
                if (!isfinite(v)) atomicMin(&scalars->bad_loss_batch, (int)b);
                epoch_loss += v * (double)rows;
            }
        }

        // The output layer's gradient (all of it) beside the delta of the block's share of the layer below.
        const auto optimize = [&](float& p, float g, float& m, float& v) {
            const float value =
                adam ? adam_value(p, g, m, v, a.beta1, a.beta2, a.epsilon, step_size, bc2_sqrt, decay)
                     : sgd_value(p, g, m, step_size, a.momentum);
            if (!isfinite(value)) atomicMin(&scalars->bad_weight_batch, (int)b);
            p = value;
        };
        {
            const brain_fused_layer& below = a.layers[top - 1];
            ClusterProduct g = {};
            g.x = smem + s.head_delta;
            g.xm = 1;
            g.xk = head.outputs;
            g.y = stage;
            g.yk = head_pitch;
            g.yn = 1;
            g.m = head.outputs;
            g.n = head_n;
            g.k = rows;
            g.out = grad;
            g.pitch = head_pitch;
            cluster_shape(g);
            ClusterProduct d = {};
            d.x = smem + s.head_delta;
            d.xm = head.outputs;
            d.xk = 1;
            d.y = smem + s.weights[top] + first_of(top - 1);
            d.yk = head_pitch;
            d.yn = 1;
            d.m = rows;
            d.n = count_of(top - 1);
            d.k = head.outputs;
            d.out = smem + s.deltas[(top - 1) & 1];
            d.pitch = s.slice_pitch[top - 1];
            d.below_a = smem + s.acts[top - 1];
            d.below_z = s.zs[top - 1] != s.acts[top - 1] ? smem + s.zs[top - 1] : nullptr;
            d.below_pitch = s.slice_pitch[top - 1];
            d.activation = below.activation;
            d.param = below.param;
            cluster_shape(d);
            cluster_stage<CLUSTER_GRADIENT, CLUSTER_DELTA>(sh, g, d, true);
            for (unsigned e = threadIdx.x; e < head.outputs * head_n; e += BRAIN_CLUSTER_THREADS) {
                const unsigned j = e / head_n, at = j * head_pitch + e - j * head_n;
                float m = smem[s.head_m + at], v = adam ? smem[s.head_v + at] : 0.0f;
                optimize(smem[s.weights[top] + at], grad[at], m, v);
                smem[s.head_m + at] = m;
                if (adam) smem[s.head_v + at] = v;
            }
            cluster_barrier();
        }

        // Each hidden layer backward: the gradient of the block's rows beside the delta of its share of the layer
        // below; after the cluster barrier, the optimizer on its rows (their state in global memory).
        for (unsigned l = top; l-- > 0;) {
            const brain_fused_layer& layer = a.layers[l];
            const unsigned pitch = brain_cluster_pitch(layer.inputs), n = layer.inputs + 1;
            const unsigned delta_pitch = brain_cluster_pitch(layer.outputs);
            if (l > 0) {
                shard_gather_columns(stage, pitch, s.acts[l - 1], s.slice_pitch[l - 1], rows, layer.inputs, blocks,
                                     remote, true);
                shard_gather_columns(smem + s.stage_delta, delta_pitch, s.deltas[l & 1], s.slice_pitch[l], rows,
                                     layer.outputs, blocks, remote, false);
                shard_gather_weights(smem + s.stage_weights, s.slice_pitch[l - 1], s, layer, l, first_of(l - 1),
                                     count_of(l - 1), blocks, remote);
                __syncthreads();
            }
            ClusterProduct g = {};
            g.x = smem + s.deltas[l & 1];
            g.xm = 1;
            g.xk = s.slice_pitch[l];
            g.y = l > 0 ? stage : inputs;
            g.yk = pitch;
            g.yn = 1;
            g.m = count_of(l);
            g.n = n;
            g.k = rows;
            g.out = grad;
            g.pitch = pitch;
            cluster_shape(g);
            if (l > 0) {
                const brain_fused_layer& below = a.layers[l - 1];
                ClusterProduct d = {};
                d.x = smem + s.stage_delta;
                d.xm = delta_pitch;
                d.xk = 1;
                d.y = smem + s.stage_weights;
                d.yk = s.slice_pitch[l - 1];
                d.yn = 1;
                d.m = rows;
                d.n = count_of(l - 1);
                d.k = layer.outputs;
                d.out = smem + s.deltas[(l - 1) & 1];
                d.pitch = s.slice_pitch[l - 1];
                d.below_a = smem + s.acts[l - 1];
                d.below_z = s.zs[l - 1] != s.acts[l - 1] ? smem + s.zs[l - 1] : nullptr;
                d.below_pitch = s.slice_pitch[l - 1];
                d.activation = below.activation;
                d.param = below.param;
                cluster_shape(d);
                cluster_stage<CLUSTER_GRADIENT, CLUSTER_DELTA>(sh, g, d, true);
                cluster_barrier();
            } else {
                cluster_stage<CLUSTER_GRADIENT, CLUSTER_GRADIENT>(sh, g, g, false);
            }
            const unsigned first = first_of(l);
            for (unsigned e = threadIdx.x; e < count_of(l) * n; e += BRAIN_CLUSTER_THREADS) {
                const unsigned j = e / n, i = e - j * n, at = j * pitch + i;
                const brain_u64 q = shard_global(layer, first + j, i);
                float m = a.state_m[q], v = adam ? a.state_v[q] : 0.0f;
                optimize(smem[s.weights[l] + at], grad[at], m, v);
                a.state_m[q] = m;
                if (adam) a.state_v[q] = v;
            }
        }
        rows = next_rows;
    }

    // The block's rows of the hidden layers back to global memory (their optimizer state is there already), and
    // from block 0 the output layer with its state and the epoch's loss.
    for (unsigned l = 0; l <= top; ++l) {
        if (l == top && rank != 0) break;
        const brain_fused_layer& layer = a.layers[l];
        const unsigned n = layer.inputs + 1, pitch = brain_cluster_pitch(layer.inputs);
        const unsigned first = l < top ? first_of(l) : 0u, count = l < top ? count_of(l) : layer.outputs;
        for (unsigned e = threadIdx.x; e < count * n; e += BRAIN_CLUSTER_THREADS) {
            const unsigned j = e / n, i = e - j * n;
            const brain_u64 g = shard_global(layer, first + j, i);
            a.params[g] = smem[s.weights[l] + j * pitch + i];
            if (l == top) {
                a.state_m[g] = smem[s.head_m + j * pitch + i];
                if (adam) a.state_v[g] = smem[s.head_v + j * pitch + i];
            }
        }
    }
    if (rank == 0 && threadIdx.x == loss_thread) {
        scalars->epoch_loss_sum += epoch_loss;
        finish_epoch(scalars, a.rows);
        scalars->step = step0 + batches;
    }
#endif
}

// The fused epoch kernel: a whole epoch of a narrow network in one cooperative launch. Appended by the plugin to
// brain_kernels.cu (whose device functions it shares: activations, the output loss row, the optimizer elements),
// so the math is the same code as the per-operation kernels.
//
// Why: for small layers an optimizer step is a dozen tiny kernels, and even replayed from a CUDA graph each one
// costs a launch gap of a few microseconds, which is most of the step. Here every block of the grid (one per SM,
// all resident, which a cooperative launch guarantees) walks the same sequence of phases, separated by grid-wide
// barriers: per batch, one phase per layer forward, one for the loss, one per layer backward (weight gradients and
// the next delta together; the optimizer update is fused into the last). 2L + 1 barriers per step and no launch.
// Every output is computed by one thread or one warp in a fixed order, so results are deterministic.

#define BRAIN_FUSED_THREADS 256
#define BRAIN_FUSED_WARPS (BRAIN_FUSED_THREADS / BRAIN_WARP)
#define BRAIN_TILE 32       // a tile's rows and columns
#define BRAIN_TILE_K 64     // K per shared-memory chunk
#define BRAIN_TILE_PITCH 34 // shared row pitch: even for 8-byte loads, and only 2-way conflicts on stores

// The kernel's arguments stay in the parameter space while their address is taken (sm_70 and newer).
#if __CUDA_ARCH__ >= 700
#define BRAIN_GRID_CONSTANT __grid_constant__
#else
#define BRAIN_GRID_CONSTANT
#endif

// One matrix operand: element (i, j) is p[row(i) * rs + j * cs], with row(i) = index ? index[i] : i (the index
// maps batch positions to data-set rows through the epoch's permutation).
struct FusedOperand {
    const float* p;
    const uint32_t* index;
    brain_u64 rs;
    brain_u64 cs;
    __device__ __forceinline__ float at(unsigned i, unsigned j) const {
        // Plain loads, never __ldg: the kernel itself writes these arrays in earlier phases (the barrier's fences
        // make those writes visible; the read-only cache would not).
        const brain_u64 row = index ? (brain_u64)index[i] : (brain_u64)i;
        return p[row * rs + (brain_u64)j * cs];
    }
};

enum FusedEpilogue { FUSED_FORWARD = 0, FUSED_WEIGHT_GRADIENT = 1, FUSED_DELTA = 2 };

// C (M x N) = A (M x K) B (K x N), finished by `kind`'s epilogue.
struct FusedGemm {
    FusedOperand a;
    FusedOperand b;
    unsigned m;
    unsigned n;
    unsigned k;
    int kind;
    const brain_fused_layer* layer; // the layer the GEMM belongs to
    const brain_fused_layer* below; // FUSED_DELTA: the layer whose delta is written
    bool last;                      // FUSED_FORWARD: the output layer (its activation is the loss phase's)
    bool update;                    // FUSED_WEIGHT_GRADIENT: apply the optimizer now instead of storing
};

// What every phase needs: the arguments, this step's batch and optimizer coefficients.
struct FusedContext {
    const brain_fused_epoch_args* args;
    int batch;
    float step_size;
    float bc2_sqrt;
    float decay;
};

// Grid-wide barrier over all blocks of a cooperative launch (the pattern cooperative_groups uses: one arrival
// counter and a generation that the last arrival advances). The scalar block holds both, zero between launches.
static __device__ void grid_barrier(brain_cuda_scalars* s) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile uint32_t* generation = &s->barrier_generation;
        const uint32_t seen = *generation;
        __threadfence();
        if (atomicAdd(&s->barrier_arrived, 1u) == gridDim.x - 1) {
            atomicExch(&s->barrier_arrived, 0u);
            __threadfence();
            atomicAdd(&s->barrier_generation, 1u);
        } else {
            // A short pause between polls keeps the waiting blocks from crowding the working ones out of L2.
            while (*generation == seen) {
#if __CUDA_ARCH__ >= 700
                __nanosleep(32);
#endif
            }
        }
        __threadfence();
    }
    __syncthreads();
}

// BRAIN_CUDA_FUSED_PROFILE: block 0 stamps the global timer after each barrier of batch 1 (slot 0: before it).
static __device__ __forceinline__ void profile_stamp(const brain_fused_epoch_args& a, brain_u64 batch,
                                                     unsigned& slot) {
    if (!a.profile || batch != 1 || blockIdx.x != 0) return;
    if (threadIdx.x == 0 && slot < BRAIN_FUSED_PROFILE_SLOTS) {
        brain_u64 now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        a.profile[slot] = now;
    }
    ++slot;
}

// The optimizer step for parameter i with gradient g; flags the batch if the parameter stops being finite.
static __device__ __forceinline__ void fused_update(const FusedContext& c, brain_u64 i, float g) {
    const brain_fused_epoch_args& a = *c.args;
    float p;
    if (a.optimizer == BRAIN_OPT_SGD)
        p = sgd_element(a.params + i, g, a.state_m + i, a.learning_rate, a.momentum);
    else
        p = adam_element(a.params + i, g, a.state_m + i, a.state_v + i, a.beta1, a.beta2, a.epsilon, c.step_size,
                         c.bc2_sqrt, c.decay);
    if (!isfinite(p)) atomicMin(&a.scalars->bad_weight_batch, c.batch);
}

static __device__ __forceinline__ void fused_epilogue(const FusedContext& c, const FusedGemm& g, unsigned m,
                                                      unsigned n, float acc) {
    const brain_u64 at = (brain_u64)m * g.n + n;
    if (g.kind == FUSED_FORWARD) {
        const brain_fused_layer& l = *g.layer;
        const float v = acc + c.args->params[l.bias_offset + n];
        l.z[at] = v;
        if (!g.last && l.a != l.z) l.a[at] = brain_activate(l.activation, v, l.param);
    } else if (g.kind == FUSED_WEIGHT_GRADIENT) {
        const brain_u64 i = g.layer->weight_offset + at;
        if (g.update)
            fused_update(c, i, acc);
        else
            c.args->grads[i] = acc;
    } else {
        const brain_fused_layer& l = *g.below;
        l.delta[at] = acc * brain_derivative(l.activation, l.z[at], l.a[at], l.param);
    }
}

// Small outputs (a GEMV, a narrow weight gradient): one warp per output element, lanes striding over K.
static __device__ void fused_gemm_warps(const FusedContext& c, const FusedGemm& g, unsigned rank) {
    const unsigned lane = threadIdx.x % BRAIN_WARP;
    const brain_u64 warps = (brain_u64)gridDim.x * BRAIN_FUSED_WARPS;
    const brain_u64 outputs = (brain_u64)g.m * g.n;
    for (brain_u64 o = (brain_u64)rank * BRAIN_FUSED_WARPS + threadIdx.x / BRAIN_WARP; o < outputs; o += warps) {
        const unsigned m = (unsigned)(o / g.n);
        const unsigned n = (unsigned)(o - (brain_u64)m * g.n);
        float sum = 0.0f;
        // Clamped, unconditional loads (masked after) so that the unrolled steps' loads overlap.
        const unsigned steps = (g.k + BRAIN_WARP - 1) / BRAIN_WARP;
#pragma unroll 4
        for (unsigned step = 0; step < steps; ++step) {
            const unsigned k = step * BRAIN_WARP + lane, kc = min(k, g.k - 1);
            const float v = g.a.at(m, kc) * g.b.at(kc, n);
            sum += k < g.k ? v : 0.0f;
        }
        sum = warp_sum(sum);
        if (lane == 0) fused_epilogue(c, g, m, n, sum);
    }
}

// Larger outputs: 32 x 32 tiles, one per block at a time, 2 x 2 adjacent outputs per thread. K goes in chunks of
// BRAIN_TILE_K staged in shared memory, the next chunk's global loads in flight while the current one is
// multiplied: the phases are latency-bound, so long chunks (few round trips to L2 per tile) matter most.
static __device__ void fused_gemm_tiles(const FusedContext& c, const FusedGemm& g, unsigned rank,
                                        float (*as)[BRAIN_TILE_PITCH], float (*bs)[BRAIN_TILE_PITCH]) {
    constexpr unsigned per_thread = BRAIN_TILE_K * BRAIN_TILE / BRAIN_FUSED_THREADS;
    const unsigned tid = threadIdx.x;
    const unsigned ty = tid / 16, tx = tid % 16;
    const unsigned tiles_n = (g.n + BRAIN_TILE - 1) / BRAIN_TILE;
    const unsigned tiles = ((g.m + BRAIN_TILE - 1) / BRAIN_TILE) * tiles_n;
    // Each thread moves elements along the operand's contiguous dimension, so that a warp's loads coalesce.
    const bool a_k_fast = g.a.cs == 1, b_n_fast = g.b.cs == 1;
    for (unsigned t = rank; t < tiles; t += gridDim.x) {
        const unsigned m0 = (t / tiles_n) * BRAIN_TILE, n0 = (t % tiles_n) * BRAIN_TILE;
        float ra[per_thread], rb[per_thread];
        auto a_at = [&](unsigned e, unsigned& m, unsigned& k) {
            if (a_k_fast) {
                k = e % BRAIN_TILE_K;
                m = e / BRAIN_TILE_K;
            } else {
                m = e % BRAIN_TILE;
                k = e / BRAIN_TILE;
            }
        };
        auto b_at = [&](unsigned e, unsigned& k, unsigned& n) {
            if (b_n_fast) {
                n = e % BRAIN_TILE;
                k = e / BRAIN_TILE;
            } else {
                k = e % BRAIN_TILE_K;
                n = e / BRAIN_TILE_K;
            }
        };
        // Every load is unconditional (indices clamped into the matrix, the value masked after), so that all of
        // a thread's loads of a chunk are in flight at once instead of one round trip each.
        auto load = [&](unsigned k0) {
#pragma unroll
            for (unsigned q = 0; q < per_thread; ++q) {
                const unsigned e = tid + BRAIN_FUSED_THREADS * q;
                unsigned m, k, n;
                a_at(e, m, k);
                const float va = g.a.at(min(m0 + m, g.m - 1), min(k0 + k, g.k - 1));
                ra[q] = m0 + m < g.m && k0 + k < g.k ? va : 0.0f;
                b_at(e, k, n);
                const float vb = g.b.at(min(k0 + k, g.k - 1), min(n0 + n, g.n - 1));
                rb[q] = k0 + k < g.k && n0 + n < g.n ? vb : 0.0f;
            }
        };
        float c00 = 0.0f, c01 = 0.0f, c10 = 0.0f, c11 = 0.0f;
        load(0);
        for (unsigned k0 = 0; k0 < g.k; k0 += BRAIN_TILE_K) {
            __syncthreads(); // the previous chunk (or tile) is no longer being read
#pragma unroll
            for (unsigned q = 0; q < per_thread; ++q) {
                const unsigned e = tid + BRAIN_FUSED_THREADS * q;
                unsigned m, k, n;
                a_at(e, m, k);
                as[k][m] = ra[q];
                b_at(e, k, n);
                bs[k][n] = rb[q];
            }
            __syncthreads();
            const unsigned kmax = min(BRAIN_TILE_K, g.k - k0);
            if (k0 + BRAIN_TILE_K < g.k) load(k0 + BRAIN_TILE_K);
            // Each thread's two rows and two columns are adjacent: one 8-byte shared load for each pair, and the
            // next step's pairs are read before this step's multiply-adds so that they overlap.
            float2 a = *reinterpret_cast<const float2*>(&as[0][2 * ty]);
            float2 b = *reinterpret_cast<const float2*>(&bs[0][2 * tx]);
#pragma unroll 4
            for (unsigned kk = 0; kk < kmax; ++kk) {
                const unsigned next = kk + 1 < kmax ? kk + 1 : kk;
                const float2 na = *reinterpret_cast<const float2*>(&as[next][2 * ty]);
                const float2 nb = *reinterpret_cast<const float2*>(&bs[next][2 * tx]);
                c00 += a.x * b.x;
                c01 += a.x * b.y;
                c10 += a.y * b.x;
                c11 += a.y * b.y;
                a = na;
                b = nb;
            }
        }
        const unsigned r0 = m0 + 2 * ty, r1 = r0 + 1, q0 = n0 + 2 * tx, q1 = q0 + 1;
        if (r0 < g.m && q0 < g.n) fused_epilogue(c, g, r0, q0, c00);
        if (r0 < g.m && q1 < g.n) fused_epilogue(c, g, r0, q1, c01);
        if (r1 < g.m && q0 < g.n) fused_epilogue(c, g, r1, q0, c10);
        if (r1 < g.m && q1 < g.n) fused_epilogue(c, g, r1, q1, c11);
    }
}

// Runs one GEMM over the grid. Jobs of one phase are independent, so each starts where the previous one's blocks
// ended (`first`, advanced past the blocks this one keeps busy) instead of piling onto the first blocks.
static __device__ void fused_gemm(const FusedContext& c, const FusedGemm& g, unsigned& first,
                                  float (*as)[BRAIN_TILE_PITCH], float (*bs)[BRAIN_TILE_PITCH]) {
    const unsigned grid = gridDim.x;
    const unsigned rank = (blockIdx.x + grid - first % grid) % grid;
    const brain_u64 outputs = (brain_u64)g.m * g.n;
    // Tiles only pay when there are enough of them to occupy the grid; otherwise a warp per output is faster.
    const brain_u64 tiles =
        (brain_u64)((g.m + BRAIN_TILE - 1) / BRAIN_TILE) * ((g.n + BRAIN_TILE - 1) / BRAIN_TILE);
    brain_u64 busy;
    const brain_u64 warps = (brain_u64)grid * BRAIN_FUSED_WARPS;
    if (outputs <= 2 * warps || (tiles * 4 < grid && outputs <= 4 * warps)) {
        fused_gemm_warps(c, g, rank);
        busy = (outputs + BRAIN_FUSED_WARPS - 1) / BRAIN_FUSED_WARPS;
    } else {
        fused_gemm_tiles(c, g, rank, as, bs);
        busy = tiles;
    }
    first = (unsigned)((first + busy) % grid);
}

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

extern "C" __global__ void __launch_bounds__(BRAIN_FUSED_THREADS)
    brain_fused_epoch(const BRAIN_GRID_CONSTANT brain_fused_epoch_args args) {
    __shared__ __align__(16) float as[BRAIN_TILE_K][BRAIN_TILE_PITCH];
    __shared__ __align__(16) float bs[BRAIN_TILE_K][BRAIN_TILE_PITCH];
    __shared__ float coefficients[3];
    // The batch's data-set rows, read once per step: the layer-0 GEMMs then index through shared memory instead
    // of making a dependent round trip to global memory per element.
    __shared__ uint32_t batch_rows[BRAIN_FUSED_MAX_BATCH];
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
        if (threadIdx.x == 0)
            adam_coefficients(step0 + b + 1, args.learning_rate, args.beta1, args.beta2, args.weight_decay,
                              args.optimizer == BRAIN_OPT_ADAMW, &coefficients[0], &coefficients[1],
                              &coefficients[2]);
        __syncthreads();
        c.step_size = coefficients[0];
        c.bc2_sqrt = coefficients[1];
        c.decay = coefficients[2];

        // Forward, one phase per layer: z = input W^T + b, a = activation(z).
        for (unsigned l = 0; l < layer_count; ++l) {
            const brain_fused_layer& layer = args.layers[l];
            FusedGemm g;
            g.a = layer_input(args, l, start, batch_rows);
            g.b.p = args.params + layer.weight_offset; // B(k, n) = W[n][k]
            g.b.index = nullptr;
            g.b.rs = 1;
            g.b.cs = layer.inputs;
            g.m = rows;
            g.n = layer.outputs;
            g.k = layer.inputs;
            g.kind = FUSED_FORWARD;
            g.layer = &layer;
            g.below = nullptr;
            g.last = l + 1 == layer_count;
            g.update = false;
            unsigned first = 0;
            fused_gemm(c, g, first, as, bs);
            grid_barrier(s);
            profile_stamp(args, b, slot);
        }

        // The loss: one warp per row, as brain_output_loss.
        {
            const brain_fused_layer& out = args.layers[layer_count - 1];
            const unsigned k = out.outputs;
            for (unsigned r = warp; r < rows; r += warps) {
                const brain_u64 row = args.perm ? (brain_u64)batch_rows[r] : start + r;
                const brain_u64 at = (brain_u64)r * k;
                const float total = output_loss_row(out.z + at, out.a + at, out.delta + at, args.targets + row * k,
                                                    rows, k, out.activation, out.param, args.loss, lane);
                if (lane == 0) args.row_loss[r] = total;
            }
            grid_barrier(s);
            profile_stamp(args, b, slot);
        }

        // Backward, one phase per layer from the top: dW and db of layer l and the delta of layer l - 1 (both read
        // W of layer l, so its update waits for the next phase); the last phase (layer 0) applies the optimizer to
        // layer 0 in its epilogues and to every other layer from the stored gradients.
        for (unsigned l = layer_count; l-- > 0;) {
            const brain_fused_layer& layer = args.layers[l];
            const bool update = l == 0;
            if (l + 1 == layer_count && blockIdx.x == 0) add_batch_loss(s, args.row_loss, rows, (int)b);

            FusedGemm dw; // dW (out x in) = delta^T (out x rows) input (rows x in)
            dw.a.p = layer.delta;
            dw.a.index = nullptr;
            dw.a.rs = 1;
            dw.a.cs = layer.outputs;
            dw.b = layer_input(args, l, start, batch_rows);
            dw.m = layer.outputs;
            dw.n = layer.inputs;
            dw.k = rows;
            dw.kind = FUSED_WEIGHT_GRADIENT;
            dw.layer = &layer;
            dw.below = nullptr;
            dw.last = false;
            dw.update = update;
            unsigned first = 0;
            fused_gemm(c, dw, first, as, bs);

            if (l > 0) {
                FusedGemm dx; // delta below (rows x in) = delta (rows x out) W (out x in), times activation'
                dx.a.p = layer.delta;
                dx.a.index = nullptr;
                dx.a.rs = layer.outputs;
                dx.a.cs = 1;
                dx.b.p = args.params + layer.weight_offset;
                dx.b.index = nullptr;
                dx.b.rs = layer.inputs;
                dx.b.cs = 1;
                dx.m = rows;
                dx.n = layer.inputs;
                dx.k = layer.outputs;
                dx.kind = FUSED_DELTA;
                dx.layer = &layer;
                dx.below = &args.layers[l - 1];
                dx.last = false;
                dx.update = false;
                fused_gemm(c, dx, first, as, bs);
            }

            // db: one warp per column, a fixed-order sum.
            const unsigned bias_warp = (warp + warps - (first * BRAIN_FUSED_WARPS) % warps) % warps;
            for (unsigned j = bias_warp; j < layer.outputs; j += warps) {
                float sum = 0.0f;
#pragma unroll 4
                for (unsigned r = lane; r < rows; r += BRAIN_WARP)
                    sum += layer.delta[(brain_u64)r * layer.outputs + j];
                sum = warp_sum(sum);
                if (lane == 0) {
                    if (update)
                        fused_update(c, layer.bias_offset + j, sum);
                    else
                        args.grads[layer.bias_offset + j] = sum;
                }
            }

            if (update && layer_count > 1)
                for (brain_u64 i = args.layers[1].weight_offset + thread; i < args.parameter_count; i += threads)
                    fused_update(c, i, args.grads[i]);
            grid_barrier(s);
            profile_stamp(args, b, slot);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        finish_epoch(s, args.rows);
        s->step = step0 + batches;
    }
}

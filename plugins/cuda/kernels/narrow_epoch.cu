// The narrow epoch kernel: a whole epoch of a network whose layers are at most BRAIN_NARROW_WIDTH wide, in one
// cooperative launch with two grid barriers per step (the fused epoch kernel has one per layer and direction).
//
// Each step has two phases. In the first, each block takes a slice of at most BRAIN_NARROW_ROWS batch rows through
// every layer on its own: forward (z = x W^T + b, a = activation(z)), the loss and dL/dz of the output layer (one
// warp per row, as brain_output_loss), and backward (delta = delta_above W times the activation's derivative), with
// the rows' activations and deltas in shared memory and nothing but __syncthreads between layers. It also stores z,
// a and delta in the layers' buffers. The weights stream through shared memory in chunks of BRAIN_NARROW_KC rows
// of the products' K, BRAIN_NARROW_STAGES - 1 chunks ahead of the multiply-adds, across the products' boundaries
// (which chunk comes next never depends on the data). After a grid barrier, the second phase reduces over the
// whole batch: every layer's weight gradient (delta^T input, K = the batch's rows) and bias gradient with the
// optimizer applied at once, spread over the grid as the fused epoch kernel's weight gradients are (fused_gemm,
// tiles or a warp per output), and the batch's loss. A second grid barrier, and the next step reads the new
// weights.
//
// Compiled in the same program as fused_epoch.cu (kernel_compiler.cpp's kernel_source), whose grid barrier,
// weight-gradient products and loss rows it uses. Every output is computed by one thread or one warp in a fixed
// order, so results are deterministic.
#include "fused_epoch.cu"

#define BRAIN_NARROW_KC 16                     // K per streamed chunk
#define BRAIN_NARROW_STAGES 3                  // chunks in shared memory: the one multiplied and two being copied
#define BRAIN_NARROW_PITCH 132                 // row pitch of the rows' activations and deltas in shared memory
#define BRAIN_NARROW_B_SLOT (BRAIN_NARROW_WIDTH * (BRAIN_NARROW_KC + 2)) // a chunk of W: N x (KC + pad) floats
#define BRAIN_NARROW_A_PITCH (BRAIN_NARROW_KC + 1) // layer 0's input chunk: rows x KC floats, this pitch
#define BRAIN_NARROW_SLOT (BRAIN_NARROW_B_SLOT + BRAIN_NARROW_ROWS * BRAIN_NARROW_A_PITCH)

// The first phase's shared memory (it shares the block's shared memory with the second phase's tiles).
struct NarrowShared {
    float slots[BRAIN_NARROW_STAGES][BRAIN_NARROW_SLOT];               // streamed chunks: W's, then layer 0's input
    float rows[2][BRAIN_NARROW_ROWS][BRAIN_NARROW_PITCH];              // a layer's input rows and its output rows
};
union NarrowBlockShared {
    TileShared tile;
    NarrowShared narrow;
};

// How a product of N <= BRAIN_NARROW_WIDTH columns spreads over the block: its N / 4 column quads (4 columns per
// lane) in groups of `quads` per warp, `spread` (a power of two) lanes per group member, and the lanes of one quad
// splitting each chunk's K `split` ways (a power of two, 8 to 32), added up by shuffles at the end. A chunk of W is
// held column-major with `pitch` floats per column, chosen so that a warp's reads of it hit 32 different banks.
struct NarrowLayout {
    unsigned quads;  // column quads per warp
    unsigned spread; // quads rounded up to a power of two: lane = quad + spread * k-slice
    unsigned split;  // 32 / spread
    unsigned pitch;  // floats per column of a staged chunk of W
};
static __device__ __forceinline__ NarrowLayout narrow_layout(unsigned n) {
    NarrowLayout l;
    const unsigned column_quads = (n + 3) / 4;
    l.quads = (column_quads + BRAIN_FUSED_WARPS - 1) / BRAIN_FUSED_WARPS; // 1..4
    l.spread = l.quads <= 1 ? 1u : l.quads <= 2 ? 2u : 4u;
    l.split = BRAIN_WARP / l.spread;
    // Lane (q, s) reads column 4q + j at k = s (+ split i): word (4q + j) pitch + s. 4 pitch = split (mod 32) puts
    // the quads' 32 words on 32 banks.
    l.pitch = BRAIN_NARROW_KC + (l.split == 8 ? 2u : l.split == 16 ? 4u : 1u);
    return l;
}

// One product of the first phase: C (rows x n) = A (rows x k) B (k x n). Forward: B(k, c) = W[c][k], layer
// `layer`'s weights; backward: B(k, c) = W[k][c], the weights of the layer above `layer` (whose delta it writes).
struct NarrowProduct {
    const float* w;
    unsigned k;
    unsigned n;
    unsigned layer;
    bool forward;
};

// Product g of a step (g < L: layer g forward; then layers L - 1 down to 1 backward, each writing the delta of the
// layer below).
static __device__ __forceinline__ NarrowProduct narrow_product(const brain_fused_epoch_args& a, unsigned g) {
    const unsigned layers = a.layer_count;
    NarrowProduct p;
    p.forward = g < layers;
    const unsigned l = p.forward ? g : 2 * layers - 1 - g; // the layer whose weights it reads
    const brain_fused_layer& layer = a.layers[l];
    p.w = a.params + layer.weight_offset;
    p.k = p.forward ? layer.inputs : layer.outputs;
    p.n = p.forward ? layer.outputs : layer.inputs;
    p.layer = p.forward ? l : l - 1;
    return p;
}

// The chunks of the first phase, in order over its products, copied BRAIN_NARROW_STAGES - 1 ahead of their use: each
// call queues the next chunk (nothing past the last) into its slot and commits it as one group. The same sequence in
// every thread of the block.
struct NarrowStream {
    unsigned product = 0; // the product and chunk of the next chunk to queue
    unsigned chunk = 0;
    unsigned queued = 0;  // chunks queued so far: the next one goes to slot queued % BRAIN_NARROW_STAGES
};

static __device__ void narrow_issue(const brain_fused_epoch_args& a, NarrowStream& st, unsigned products,
                                    NarrowShared& sh, const uint32_t* own_rows, unsigned nr) {
    if (st.product < products) {
        const NarrowProduct p = narrow_product(a, st.product);
        const NarrowLayout l = narrow_layout(p.n);
        float* slot = sh.slots[st.queued % BRAIN_NARROW_STAGES];
        const unsigned k0 = st.chunk * BRAIN_NARROW_KC;
        // W's chunk, column-major (column c at slot + c pitch), read along W's rows: a forward product's K runs along
        // them, a backward product's N.
        const unsigned count = p.n * BRAIN_NARROW_KC;
        for (unsigned e = threadIdx.x; e < count; e += BRAIN_FUSED_THREADS) {
            unsigned c, kk;
            if (p.forward) {
                c = e / BRAIN_NARROW_KC;
                kk = e % BRAIN_NARROW_KC;
            } else {
                kk = e / p.n;
                c = e - kk * p.n;
            }
            const unsigned k = min(k0 + kk, p.k - 1);
            const float* src = p.forward ? p.w + (brain_u64)c * p.k + k : p.w + (brain_u64)k * p.n + c;
            tile_copy(slot + c * l.pitch + kk, src, k0 + kk < p.k);
        }
        // Layer 0's inputs: the slice's rows of the data set (through the permutation), rows past the slice zero.
        if (st.product == 0) {
            float* in = slot + BRAIN_NARROW_B_SLOT;
            const float* features = a.features;
            for (unsigned e = threadIdx.x; e < BRAIN_NARROW_ROWS * BRAIN_NARROW_KC; e += BRAIN_FUSED_THREADS) {
                const unsigned r = e / BRAIN_NARROW_KC, kk = e % BRAIN_NARROW_KC;
                const unsigned k = min(k0 + kk, p.k - 1);
                const brain_u64 row = own_rows[min(r, nr - 1)];
                tile_copy(in + r * BRAIN_NARROW_A_PITCH + kk, features + row * p.k + k, r < nr && k0 + kk < p.k);
            }
        }
        if (++st.chunk * BRAIN_NARROW_KC >= p.k) {
            st.chunk = 0;
            ++st.product;
        }
    }
    tile_commit();
    ++st.queued;
}

// The first phase for the slice of `nr` rows at batch position p0 (own_rows: their data-set rows, in shared
// memory): every product of the step in order, the loss between the forward and the backward ones.
static __device__ void narrow_rows_phase(const brain_fused_epoch_args& a, NarrowShared& sh, const uint32_t* own_rows,
                                         unsigned p0, unsigned nr, unsigned rows) {
    const unsigned layers = a.layer_count, products = 2 * layers - 1;
    const unsigned warp = threadIdx.x / BRAIN_WARP, lane = threadIdx.x % BRAIN_WARP;
    NarrowStream st;
#pragma unroll 1
    for (unsigned s = 0; s + 1 < BRAIN_NARROW_STAGES; ++s) narrow_issue(a, st, products, sh, own_rows, nr);
    unsigned used = 0; // chunks multiplied so far
    unsigned cur = 0;  // sh.rows[cur]: the current product's input rows (but layer 0's, which stream with W)
#pragma unroll 1
    for (unsigned g = 0; g < products; ++g) {
        const NarrowProduct p = narrow_product(a, g);
        const NarrowLayout l = narrow_layout(p.n);
        const unsigned q = lane % l.spread, ks = lane / l.spread;
        const unsigned quad = warp * l.quads + q;            // this lane's column quad
        const bool active = q < l.quads && 4 * quad < p.n;   // some of its columns are in the product
        const brain_fused_layer& out = a.layers[p.layer];
        // What the epilogue reads besides the sums, loaded now so that it lands during the multiply-adds: the bias
        // (forward) or z and a of the layer whose delta this is (backward), row ks (the row this lane finishes).
        float e0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, e1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        const bool finishes = active && ks < nr;
#pragma unroll
        for (unsigned j = 0; j < 4; ++j) {
            const unsigned c = 4 * quad + j;
            if (!finishes || c >= p.n) continue;
            if (p.forward) {
                e0[j] = a.params[out.bias_offset + c];
            } else {
                const brain_u64 at = (brain_u64)(p0 + ks) * p.n + c;
                e0[j] = out.z[at];
                e1[j] = out.a[at];
            }
        }
        float acc[BRAIN_NARROW_ROWS][4];
#pragma unroll
        for (unsigned r = 0; r < BRAIN_NARROW_ROWS; ++r)
#pragma unroll
            for (unsigned j = 0; j < 4; ++j) acc[r][j] = 0.0f;
        const float* rows_in = &sh.rows[cur][0][0];
        const unsigned chunks = (p.k + BRAIN_NARROW_KC - 1) / BRAIN_NARROW_KC;
#pragma unroll 1
        for (unsigned chunk = 0; chunk < chunks; ++chunk, ++used) {
            tile_wait<BRAIN_NARROW_STAGES - 2>(); // this thread's copies of chunk `used` have landed
            __syncthreads();                     // everyone's have, and the slot refilled next is no longer read
            narrow_issue(a, st, products, sh, own_rows, nr);
            const float* slot = sh.slots[used % BRAIN_NARROW_STAGES];
            const unsigned k0 = chunk * BRAIN_NARROW_KC, kc = min((unsigned)BRAIN_NARROW_KC, p.k - k0);
            // A(r, k): layer 0's streamed inputs, else the rows in shared memory.
            const float* in = g == 0 ? slot + BRAIN_NARROW_B_SLOT : rows_in + k0;
            const unsigned in_pitch = g == 0 ? BRAIN_NARROW_A_PITCH : BRAIN_NARROW_PITCH;
            const float* wq = slot + 4 * quad * l.pitch;
            for (unsigned kk = ks; kk < kc; kk += l.split) {
                float b[4];
#pragma unroll
                for (unsigned j = 0; j < 4; ++j) b[j] = wq[j * l.pitch + kk];
#pragma unroll
                for (unsigned r = 0; r < BRAIN_NARROW_ROWS; ++r) {
                    if (r < nr) {
                        const float x = in[r * in_pitch + kk];
#pragma unroll
                        for (unsigned j = 0; j < 4; ++j) acc[r][j] += x * b[j];
                    }
                }
            }
        }
        // The k slices' sums, added by a butterfly over the lanes of one quad (every one of them ends with the
        // same sums, in a fixed order).
#pragma unroll
        for (unsigned off = 1; off < BRAIN_WARP; off <<= 1) {
            if (off < l.spread) continue;
#pragma unroll
            for (unsigned r = 0; r < BRAIN_NARROW_ROWS; ++r)
                if (r < nr) // the same for the whole warp
#pragma unroll
                    for (unsigned j = 0; j < 4; ++j) acc[r][j] += __shfl_xor_sync(BRAIN_FULL_MASK, acc[r][j], off);
        }
        // Lane (q, ks) finishes row ks of its quad's columns: into the layer's buffers and the other rows buffer.
        float* rows_out = &sh.rows[cur ^ 1][0][0];
        if (finishes) {
            float v[4];
#pragma unroll
            for (unsigned j = 0; j < 4; ++j) {
                v[j] = 0.0f;
#pragma unroll
                for (unsigned r = 0; r < BRAIN_NARROW_ROWS; ++r)
                    if (r == ks) v[j] = acc[r][j];
            }
            const bool last = p.forward && p.layer + 1 == layers;
#pragma unroll
            for (unsigned j = 0; j < 4; ++j) {
                const unsigned c = 4 * quad + j;
                if (c >= p.n) continue;
                const brain_u64 at = (brain_u64)(p0 + ks) * p.n + c;
                float value;
                if (p.forward) {
                    const float z = v[j] + e0[j];
                    out.z[at] = z;
                    value = z; // the output layer's activation is the loss's
                    if (!last && out.a != out.z) {
                        value = brain_activate(out.activation, z, out.param);
                        out.a[at] = value;
                    }
                } else {
                    value = v[j] * brain_derivative(out.activation, e0[j], e1[j], out.param);
                    out.delta[at] = value;
                }
                rows_out[ks * BRAIN_NARROW_PITCH + c] = value;
            }
        }
        cur ^= 1;
        if (g + 1 == layers) {
            // The loss: one warp per row, as brain_output_loss, from the output layer's z (rows[cur]) to its dL/dz
            // (rows[cur ^ 1], which becomes the first backward product's input) and the row's loss.
            __syncthreads(); // every z of the slice is in shared memory; the last product's input is read
            const brain_fused_layer& head = a.layers[layers - 1];
            const unsigned k = head.outputs;
            if (warp < nr) {
                const unsigned r = warp;
                const brain_u64 at = (brain_u64)(p0 + r) * k;
                float* dr = &sh.rows[cur ^ 1][r][0];
                const float total =
                    output_loss_row(&sh.rows[cur][r][0], head.a + at, dr, a.targets + (brain_u64)own_rows[r] * k,
                                    rows, k, head.activation, head.param, a.loss, lane);
                __syncwarp();
                for (unsigned i = lane; i < k; i += BRAIN_WARP) head.delta[at + i] = dr[i];
                if (lane == 0) a.row_loss[p0 + r] = total;
            }
            cur ^= 1;
        }
    }
    tile_wait<0>();
    __syncthreads(); // the slots and rows are free for the next slice or the second phase
}

extern "C" __global__ void BRAIN_FUSED_BOUNDS brain_narrow_epoch(const BRAIN_GRID_CONSTANT brain_fused_epoch_args args) {
    __shared__ __align__(16) NarrowBlockShared sh;
    __shared__ float coefficients[3][BRAIN_FUSED_THREADS]; // per step: step_coefficients (the rate for SGD)
    __shared__ uint32_t batch_rows[BRAIN_FUSED_MAX_BATCH];  // the batch's data-set rows
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
    const unsigned slice_rows = args.narrow_rows; // 1..BRAIN_NARROW_ROWS, set by the plugin

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
        for (unsigned r = threadIdx.x; r < rows; r += blockDim.x)
            batch_rows[r] = args.perm ? args.perm[start + r] : (uint32_t)(start + r);
        // The optimizer's coefficients from each step's rate, every BRAIN_FUSED_THREADS steps, a step per thread
        // (as the fused epoch).
        const unsigned entry = (unsigned)(b % BRAIN_FUSED_THREADS);
        if (entry == 0 && b + threadIdx.x < batches)
            step_coefficients(step0 + b + threadIdx.x + 1, args.rates[b + threadIdx.x], args.optimizer, args.beta1,
                              args.beta2, args.weight_decay, &coefficients[0][threadIdx.x],
                              &coefficients[1][threadIdx.x], &coefficients[2][threadIdx.x]);
        __syncthreads();
        c.step_size = coefficients[0][entry];
        c.bc2_sqrt = coefficients[1][entry];
        c.decay = coefficients[2][entry];

        // Phase 1: the block's slices of rows through every layer, forward, loss and backward.
        const unsigned slices = (rows + slice_rows - 1) / slice_rows;
        for (unsigned slice = blockIdx.x; slice < slices; slice += gridDim.x) {
            const unsigned p0 = slice * slice_rows, nr = min(slice_rows, rows - p0);
            narrow_rows_phase(args, sh.narrow, batch_rows + p0, p0, nr, rows);
        }
        grid_barrier(s);

        // Phase 2: every layer's weight and bias gradient over the batch, applied by the optimizer at once, spread
        // over the grid; the batch's loss on the block after them.
        brain_u64 half_tiles = 0;
        for (unsigned l = 0; l < layer_count; ++l)
            half_tiles += fused_half_tile_blocks(weight_gradient_gemm(args, l, rows, start, batch_rows, true));
        const unsigned tm = half_tiles <= gridDim.x ? BRAIN_TILE / 2 : BRAIN_TILE;
        unsigned first = 0;
        for (unsigned l = layer_count; l-- > 0;) {
            FusedGemm dw = weight_gradient_gemm(args, l, rows, start, batch_rows, true);
            dw.bias = !fused_uses_warps(dw); // tiles sum the bias in their first column
            fused_gemm<FUSED_WEIGHT_GRADIENT>(c, dw, first, sh.tile, tm);
        }
        // The bias of the weight gradients that went to a warp per output: a warp per column, a fixed-order sum.
        for (unsigned l = 0; l < layer_count; ++l) {
            const FusedGemm dw = weight_gradient_gemm(args, l, rows, start, batch_rows, true);
            if (!fused_uses_warps(dw)) continue;
            const brain_fused_layer& layer = args.layers[l];
            const unsigned columns = layer.outputs;
            const unsigned bias_warp = (warp + warps - (first * BRAIN_FUSED_WARPS) % warps) % warps;
            for (unsigned j = bias_warp; j < columns; j += warps) {
                float sum = 0.0f;
#pragma unroll 4
                for (unsigned r = lane; r < rows; r += BRAIN_WARP) sum += layer.delta[(brain_u64)r * columns + j];
                sum = warp_sum(sum);
                if (lane == 0) fused_update(c, layer.bias_offset + j, sum);
            }
            first = (first + (columns + BRAIN_FUSED_WARPS - 1) / BRAIN_FUSED_WARPS) % gridDim.x;
        }
        if (blockIdx.x == first % gridDim.x) add_batch_loss(s, args.row_loss, rows, (int)b);
        grid_barrier(s);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        finish_epoch(s, args.rows);
        s->step = step0 + batches;
    }
}

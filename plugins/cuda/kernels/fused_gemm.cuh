// The fused epoch kernel's products (fused_epoch.cu runs them): C = A B over the grid, in tiles through shared
// memory or a warp per output, each finished by its epilogue (fused_epilogues.cuh).
#pragma once

#include "fused_epilogues.cuh"

#define BRAIN_FUSED_THREADS 256
#define BRAIN_FUSED_WARPS (BRAIN_FUSED_THREADS / BRAIN_WARP)
#define BRAIN_TILE 32       // a full tile's rows and columns
#define BRAIN_TILE_K 32     // K per shared-memory chunk
#define BRAIN_TILE_STAGES 4 // chunks in shared memory: the one multiplied and those being copied
// Where a weight gradient's bias gradient is summed when the weight gradient goes to tiles: 2 (the default) by the
// tiles only when the blocks the phase leaves free have fewer warps than there are columns (fused_bias_in_tiles),
// else by a warp per column after the phase's products; 1 always by the tiles, 0 never (docs/cuda-plugin.md).
#ifndef BRAIN_FUSED_BIAS_IN_TILES
#define BRAIN_FUSED_BIAS_IN_TILES 2
#endif
#define BRAIN_TILE_GROUPS 4 // thread groups splitting a chunk's K in full tiles (BRAIN_FUSED_THREADS / 64)
#define BRAIN_TILE_PITCH 36 // shared row pitch: a multiple of 4 for 16-byte loads; conflict-free copies
// 1 (the default): a narrow head in the loss phase reads its weights from a copy in shared memory where it fits,
// beside the gradient slices when its backward pass runs there too, and where blocks take the rows, where a row has
// more outputs than the block has warps (head_staged); 0: from global memory (docs/cuda-plugin.md).
#ifndef BRAIN_FUSED_HEAD_STAGED
#define BRAIN_FUSED_HEAD_STAGED 1
#endif
// 1 (the default): a forward or delta product in tiles 16 high takes narrow tiles of 16 x 16 where they all run at
// once on the blocks its phase leaves it (a thread's 4 x 4 outputs over 2 k of each chunk instead of 4): twice the
// blocks walk its K, each with half the shared loads and multiply-adds per chunk (docs/performance-grid.md); 0: 16
// x 32 and 32 x 32 tiles only (test builds compare the two).
#ifndef BRAIN_FUSED_NARROW_TILES
#define BRAIN_FUSED_NARROW_TILES 1
#endif
// 1 measures a floor (test builds only, through BRAIN_CUDA_KERNEL_DEFINES; the results are wrong): the tiles'
// shared loads, multiply-adds and copies after their first BRAIN_TILE_STAGES - 1 chunks compiled out, so that a
// step keeps only its barriers, the tiles' first copies, waits, partial sums and epilogues, and the other work of
// its phases (docs/performance-grid.md). 2 keeps the multiply-adds too, on operands from registers: the floor plus
// the tiles' arithmetic, with no shared load to wait for. 3, 4 and 5 take one part of the tiles' work away at a
// time: 3 feeds A from registers (B's shared loads and every copy kept), 4 feeds B from registers, 5 keeps both
// operands' shared loads and compiles the later copies out. 0 (the default): the tiles as they are.
#ifndef BRAIN_FUSED_TILE_FLOOR
#define BRAIN_FUSED_TILE_FLOOR 0
#endif
// N > 0 stamps the SM's clock at the parts of tile 0 of layer N - 1's forward product (block 0's first thread, the
// profiled step) into the phase profile, which prints them (test builds only, through BRAIN_CUDA_KERNEL_DEFINES;
// docs/cuda-plugin.md); 0 (the default): no stamps.
#ifndef BRAIN_FUSED_TILE_STAMPS
#define BRAIN_FUSED_TILE_STAMPS 0
#endif

// Stamps `part` of the stamped tile (BRAIN_FUSED_TILE_STAMPS) in the loss stamps' slots, and the global timer at
// its first and last parts, so that the profile can scale the SM's cycles; the last slot names the stamped layer.
template <int KIND>
static __device__ __forceinline__ void tile_stamp(const FusedContext& c, const FusedGemm& g, unsigned t,
                                                  unsigned part, bool timer) {
#if BRAIN_FUSED_TILE_STAMPS
    const brain_fused_epoch_args& a = *c.args;
    if (KIND != FUSED_FORWARD || t != 0 || blockIdx.x != 0 || threadIdx.x != 0 || !a.profile || c.batch != 1 ||
        g.layer != &a.layers[BRAIN_FUSED_TILE_STAMPS - 1])
        return;
    a.profile[BRAIN_FUSED_LOSS_STAMP_SLOT + 2 + part] = clock64();
    if (timer) a.profile[BRAIN_FUSED_LOSS_STAMP_SLOT + (part ? 1 : 0)] = global_timer();
    a.profile[BRAIN_FUSED_PROFILE_SLOTS - 1] = 1000 + BRAIN_FUSED_TILE_STAMPS - 1;
#endif
}

// Small outputs (a GEMV, a narrow weight gradient): one warp per output element, lanes striding over K.
template <int KIND>
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
            float v = g.a.at(m, kc) * g.b.at(kc, n);
            if (KIND == FUSED_WEIGHT_GRADIENT && g.scale) v *= g.scale[kc];
            sum += k < g.k ? v : 0.0f;
        }
        sum = warp_sum(sum);
        if (lane == 0) fused_epilogue<KIND>(c, g, m, n, sum, fused_epilogue_load<KIND>(c, g, m, n));
    }
}

// Larger outputs: tiles of TM x 32 outputs (TM = 32, or 16 when a phase has too few tiles to occupy half the grid:
// fused_phase_tile), one per block at a time. K goes through shared memory in chunks of BRAIN_TILE_K,
// BRAIN_TILE_STAGES - 1 chunks ahead of the multiply-adds, copied by cp.async (sm_80 and newer), which needs no
// registers, so many loads are in flight at once (what bounds a tile is each warp's dependent instruction stream,
// docs/performance.md). Each thread holds a 4 x 4 block of outputs; the block's threads form groups of TM * 2 that
// split each chunk's K, and the groups' partial sums are added in a fixed order at the end.
struct TileStage {
    float a[BRAIN_TILE_K][BRAIN_TILE_PITCH]; // a[k][m] or, k-major, a[m][k] (fused_gemm_tiles)
    float b[BRAIN_TILE_K][BRAIN_TILE_PITCH]; // b[k][n] or, k-major, b[n][k]
};
struct TileShared {
    union {
        TileStage stage[BRAIN_TILE_STAGES];
        float partial[BRAIN_TILE * BRAIN_TILE * BRAIN_TILE_GROUPS]; // the groups' sums, reusing the stages
        float head[BRAIN_FUSED_WARPS * BRAIN_FUSED_HEAD_SLICE];     // the warps' slices (fused_output_and_loss)
    };
    float bias[BRAIN_FUSED_THREADS]; // the threads' sums of A's columns (the bias gradient, FusedGemm::bias)
};

// Copies one float from global to shared memory, or stores zero when `valid` is false (src is then not read).
static __device__ __forceinline__ void tile_copy(float* dst, const float* src, bool valid) {
#if __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d), "l"(src), "r"(valid ? 4 : 0) : "memory");
#else
    *dst = valid ? *src : 0.0f;
#endif
}
// Copies 4 floats from global to shared memory (both 16-byte aligned), the first bytes / 4 of them from src and
// zeros for the rest (src is not read when bytes is 0).
static __device__ __forceinline__ void tile_copy4(float* dst, const float* src, unsigned bytes) {
#if __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(bytes) : "memory");
#else
    for (unsigned i = 0; i < 4; ++i) dst[i] = 4 * i < bytes ? src[i] : 0.0f;
#endif
}
static __device__ __forceinline__ void tile_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Waits until at most `pending` of this thread's committed chunks are still being copied.
template <int pending>
static __device__ __forceinline__ void tile_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(pending) : "memory");
#endif
}

// Where element e of a chunk (`rows` x BRAIN_TILE_K) goes: (k, m) of an operand held k-major in shared memory
// (`k_major`: a row of 32 k per m, the operand's k running along memory) or m-major (a row of `rows` m per k, its m
// running along memory). Either way a warp's 32 elements are consecutive in both memories: a 128-byte line (two
// half lines when rows is 16) and shared stores free of bank conflicts.
static __device__ __forceinline__ void tile_element(unsigned e, bool k_major, unsigned rows, unsigned& k,
                                                    unsigned& m) {
    if (k_major) {
        m = e / BRAIN_TILE_K;
        k = e % BRAIN_TILE_K;
    } else {
        m = e % rows;
        k = e / rows;
    }
}

// V consecutive floats of shared memory (4, 16-byte aligned, or 2, 8-byte aligned) in the first V of a float4.
template <unsigned V>
static __device__ __forceinline__ float4 shared_load(const float* p) {
    if constexpr (V == 4) {
        return *reinterpret_cast<const float4*>(p);
    } else {
        const float2 v = *reinterpret_cast<const float2*>(p);
        return make_float4(v.x, v.y, 0.0f, 0.0f);
    }
}

// Component i of v (i known at compile time after unrolling).
static __device__ __forceinline__ float component(const float4& v, unsigned i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// The number of tiles of TM x TN outputs of an M x N product.
static __device__ __forceinline__ unsigned tile_count(unsigned tm, unsigned m, unsigned n,
                                                      unsigned tn = BRAIN_TILE) {
    return ((m + tm - 1) / tm) * ((n + tn - 1) / tn);
}

// TN: the tile's columns, 32, or 16 for the narrow tiles of a forward or delta product (BRAIN_FUSED_NARROW_TILES).
// KIND: the product's FusedEpilogue, which fixes the layouts too. AK / BK: whether A / B is held k-major in shared
// memory (a[m][k], b[n][k]) rather than m- / n-major (a[k][m], b[k][n]), the way the operand runs in global memory
// (forward: both k-major; weight gradient: neither; delta: A), so that every copy, 4 bytes or 16, reads
// consecutive addresses.
template <unsigned TM, int KIND, unsigned TN = BRAIN_TILE>
static __device__ void fused_gemm_tiles(const FusedContext& c, const FusedGemm& g, unsigned rank, TileShared& sh) {
    constexpr bool AK = KIND != FUSED_WEIGHT_GRADIENT, BK = KIND == FUSED_FORWARD;
    constexpr unsigned group_threads = TM * TN / 16; // 4 x 4 outputs each
    constexpr unsigned groups = BRAIN_FUSED_THREADS / group_threads;
    constexpr unsigned group_k = BRAIN_TILE_K / groups;
    // A k-major operand's shared loads: `vk` k of one row at a time (float4s, or float2s where a group's K is 2),
    // 4 rows of `kq` loads each.
    constexpr unsigned vk = group_k < 4 ? group_k : 4, kq = group_k / vk;
    constexpr unsigned a_loads = AK ? 4 * kq : group_k, b_loads = BK ? 4 * kq : group_k;
    constexpr unsigned a_per_thread = BRAIN_TILE_K * TM / BRAIN_FUSED_THREADS;
    constexpr unsigned b_per_thread = BRAIN_TILE_K * TN / BRAIN_FUSED_THREADS;
    constexpr unsigned outputs = TM * TN / BRAIN_FUSED_THREADS; // finished by each thread at the end
    constexpr unsigned tx_count = TN / 4;                       // a group's threads along a row of the tile
    static_assert(groups * group_threads == BRAIN_FUSED_THREADS &&
                      groups * TM * TN <= BRAIN_TILE * BRAIN_TILE * BRAIN_TILE_GROUPS,
                  "tile shape");
    static_assert(TN == BRAIN_TILE || (KIND != FUSED_WEIGHT_GRADIENT && TM == BRAIN_TILE / 2),
                  "narrow tiles are 16 x 16 tiles of a forward or delta product");
    static_assert((!AK && !BK) || group_k % vk == 0, "k-major operands are read vk k at a time");
    static_assert(a_loads > 1, "a chunk's later copies are queued after its first shared loads");
    const unsigned tid = threadIdx.x;
    const unsigned group = tid / group_threads, ty = (tid % group_threads) / tx_count, tx = tid % tx_count;
    const unsigned tiles_n = (g.n + TN - 1) / TN;
    const unsigned tiles = tile_count(TM, g.m, g.n, TN);
    const unsigned chunks = (g.k + BRAIN_TILE_K - 1) / BRAIN_TILE_K;
    // 16-byte copies of an m-major A or an n-major B (a weight gradient's delta^T and input, the delta product's
    // weights): 4 consecutive m (n) of one k, whose rows must start 16-byte aligned in global memory; constant
    // false for a k-major operand, which copies 4 bytes at a time, so that the code below folds away. B may be
    // gathered through the index (its k rows are), A not.
    const bool a_aligned = reinterpret_cast<unsigned long long>(g.a.p) % 16 == 0;
    const bool b_aligned = reinterpret_cast<unsigned long long>(g.b.p) % 16 == 0;
    const bool a_vec = !AK && a_aligned && g.a.rs == 1 && g.a.index == nullptr && g.a.cs % 4 == 0;
    const bool b_vec = TN == BRAIN_TILE && !BK && b_aligned && g.b.cs == 1 && g.b.rs % 4 == 0;
    constexpr unsigned a_quads = TM / 4, b_quads = TN / 4; // float4s per shared row of a 16-byte copy
    for (unsigned t = rank; t < tiles; t += gridDim.x) {
        const unsigned m0 = (t / tiles_n) * TM, n0 = (t % tiles_n) * TN;
        // What this thread copies of every chunk, worked out once per tile: the shared-memory slot (in stage 0),
        // the element's k within the chunk, the start of its row of A (A(m, k) = row + k cs) or of its column of B
        // (B(k, n) = column + row(k) rs), and whether its m or n lies inside the product. Per chunk that leaves an
        // add, a clamp and a multiply-add per copy. A's and B's loops stay apart: through one shared helper ptxas
        // builds a different kernel.
        unsigned a_slot[a_per_thread], a_k[a_per_thread], b_slot[b_per_thread], b_k[b_per_thread];
        const float* a_row[a_per_thread];
        const float* b_column[b_per_thread];
        bool a_in[a_per_thread], b_in[b_per_thread];
#pragma unroll
        for (unsigned q = 0; q < a_per_thread; ++q) {
            unsigned k, m;
            tile_element(tid + BRAIN_FUSED_THREADS * q, AK, TM, k, m);
            a_slot[q] = AK ? m * BRAIN_TILE_PITCH + k : k * BRAIN_TILE_PITCH + m;
            a_k[q] = k;
            a_in[q] = m0 + m < g.m;
            a_row[q] = g.a.ptr(min(m0 + m, g.m - 1), 0);
        }
#pragma unroll
        for (unsigned q = 0; q < b_per_thread; ++q) {
            unsigned k, n;
            tile_element(tid + BRAIN_FUSED_THREADS * q, BK, TN, k, n);
            b_slot[q] = BK ? n * BRAIN_TILE_PITCH + k : k * BRAIN_TILE_PITCH + n;
            b_k[q] = k;
            b_in[q] = n0 + n < g.n;
            b_column[q] = g.b.p + (brain_u64)min(n0 + n, g.n - 1) * g.b.cs;
        }
        // With 16-byte copies, thread tid copies float4 tid of each chunk (A: the first 8 TM threads): its shared
        // row (its k) r = tid / quads and 4 (tid % quads) the first float's place along it. Its bytes inside the
        // product are fixed per tile (a partial last float4 is zero-filled), its row start clamped to an aligned
        // address inside the operand.
        unsigned a4_slot = 0, a4_k = 0, a4_bytes = 0, b4_slot = 0, b4_k = 0, b4_bytes = 0;
        const float* a4_row = g.a.p;
        const float* b4_column = g.b.p;
        if (a_vec && tid < 8 * TM) {
            const unsigned r = tid / a_quads, f = 4 * (tid % a_quads);
            a4_slot = r * BRAIN_TILE_PITCH + f;
            a4_k = r;
            a4_bytes = m0 + f < g.m ? 4 * min(4u, g.m - m0 - f) : 0u;
            a4_row = g.a.p + min(m0 + f, (g.m - 1) & ~3u);
        }
        if (b_vec) {
            const unsigned r = tid / b_quads, f = 4 * (tid % b_quads);
            b4_slot = r * BRAIN_TILE_PITCH + f;
            b4_k = r;
            b4_bytes = n0 + f < g.n ? 4 * min(4u, g.n - n0 - f) : 0u;
            b4_column = g.b.p + min(n0 + f, (g.n - 1) & ~3u);
        }
        // Queues chunk `chunk` into its stage (nothing past the last chunk) and commits it as one group.
        auto issue = [&](unsigned chunk) {
            constexpr bool later_copies =
                BRAIN_FUSED_TILE_FLOOR != 1 && BRAIN_FUSED_TILE_FLOOR != 2 && BRAIN_FUSED_TILE_FLOOR != 5;
            if (chunk < chunks && (later_copies || chunk + 1 < BRAIN_TILE_STAGES)) {
                TileStage& st = sh.stage[chunk % BRAIN_TILE_STAGES];
                const unsigned k0 = chunk * BRAIN_TILE_K;
                if (a_vec) {
                    const unsigned k = k0 + a4_k;
                    if (tid < 8 * TM)
                        tile_copy4(&st.a[0][0] + a4_slot, a4_row + (brain_u64)min(k, g.k - 1) * g.a.cs,
                                   k < g.k ? a4_bytes : 0u);
                } else {
#pragma unroll
                    for (unsigned q = 0; q < a_per_thread; ++q) {
                        const unsigned k = k0 + a_k[q];
                        tile_copy(&st.a[0][0] + a_slot[q], a_row[q] + (brain_u64)min(k, g.k - 1) * g.a.cs,
                                  a_in[q] && k < g.k);
                    }
                }
                if (b_vec) {
                    const unsigned k = k0 + b4_k, kc = min(k, g.k - 1);
                    const brain_u64 row = g.b.index ? (brain_u64)g.b.index[kc] : (brain_u64)kc;
                    tile_copy4(&st.b[0][0] + b4_slot, b4_column + row * g.b.rs, k < g.k ? b4_bytes : 0u);
                } else {
#pragma unroll
                    for (unsigned q = 0; q < b_per_thread; ++q) {
                        const unsigned k = k0 + b_k[q], kc = min(k, g.k - 1);
                        const brain_u64 row = g.b.index ? (brain_u64)g.b.index[kc] : (brain_u64)kc;
                        tile_copy(&st.b[0][0] + b_slot[q], b_column[q] + row * g.b.rs, b_in[q] && k < g.k);
                    }
                }
            }
            tile_commit();
        };
        tile_stamp<KIND>(c, g, t, 0, true);
        __syncthreads(); // the previous tile's partial sums (which share the stages) have been read
        // A loop, not unrolled: each copy of the tile code would otherwise hold three copies of the queueing code.
#pragma unroll 1
        for (unsigned p = 0; p + 1 < BRAIN_TILE_STAGES; ++p) issue(p);
        tile_stamp<KIND>(c, g, t, 1, false);
        // This thread's outputs at the end: (tid / 32 + 8 q, tid % 32), q < outputs.
        EpilogueInputs in[outputs];
#pragma unroll
        for (unsigned q = 0; q < outputs; ++q) {
            const unsigned e = tid + BRAIN_FUSED_THREADS * q, m = m0 + e / TN, n = n0 + e % TN;
            if (m < g.m && n < g.n) in[q] = fused_epilogue_load<KIND>(c, g, m, n);
        }
        tile_stamp<KIND>(c, g, t, 2, false);
        // This thread's sums: rows 4 ty + i and columns 4 tx + j (n-major B) or tx + TN / 4 j (k-major B, whose
        // rows of shared memory a quarter warp then reads at 8 different banks in 32-wide tiles).
        float acc[4][4] = {};
        // A weight gradient's first column of tiles also sums A (delta^T: k = batch rows, m = outputs) over k,
        // which is the bias gradient of the tile's m: thread t adds column t % TM of its k slice of each chunk, the
        // slices are added in a fixed order at the end. This saves a pass of its own over delta.
        constexpr unsigned bias_slices = BRAIN_FUSED_THREADS / TM, bias_k = BRAIN_TILE_K / bias_slices;
        const bool bias = !AK && g.bias && n0 == 0; // an m-major A (the weight gradient's) only
        float bias_sum = 0.0f;
        for (unsigned chunk = 0; chunk < chunks; ++chunk) {
            tile_wait<BRAIN_TILE_STAGES - 2>(); // this thread's copies of `chunk` have landed
            if (KIND == FUSED_WEIGHT_GRADIENT && g.scale) {
                // A folded head's weight gradient: each thread scales the elements of A it copied itself (its own
                // copies are visible to it after the wait; the others' reads come after the barrier below) by
                // the dL/dz of their row k, so that the multiply-adds and the bias sum see delta itself.
                float* sa = &sh.stage[chunk % BRAIN_TILE_STAGES].a[0][0];
                const unsigned k0 = chunk * BRAIN_TILE_K;
                if (a_vec) {
                    const unsigned k = k0 + a4_k;
                    if (tid < 8 * TM && k < g.k) {
                        float4& v = *reinterpret_cast<float4*>(sa + a4_slot);
                        const float f = g.scale[k];
                        v.x *= f;
                        v.y *= f;
                        v.z *= f;
                        v.w *= f;
                    }
                } else {
#pragma unroll
                    for (unsigned q = 0; q < a_per_thread; ++q)
                        if (k0 + a_k[q] < g.k) sa[a_slot[q]] *= g.scale[k0 + a_k[q]];
                }
            }
            __syncthreads(); // everyone's have, and the stage refilled next is no longer read
            if (chunk == 0) tile_stamp<KIND>(c, g, t, 3, false);
            const TileStage& st = sh.stage[chunk % BRAIN_TILE_STAGES];
            // All of the group's shared loads first, then the multiply-adds: with two warps per scheduler nothing
            // else hides the loads' latency. m-major: av[kk] holds rows 4 ty + i at k0 + kk; k-major: av[i q + j]
            // holds row 4 ty + i at k0 + 4 j + (0..3), q = group_k / 4. Likewise bv. The loads go in the order
            // the multiply-adds use them (k-major: the four rows of k0..k0+3 first), and the copies of a later
            // chunk are queued after the first of them, which then lands while the copies issue.
            if (BRAIN_FUSED_TILE_FLOOR == 1) { // the chunk's group of copies (empty) keeps the waits' count
                issue(chunk + BRAIN_TILE_STAGES - 1);
                continue;
            }
            constexpr unsigned loads = a_loads > b_loads ? a_loads : b_loads;
            float4 av[a_loads], bv[b_loads];
#if BRAIN_FUSED_TILE_FLOOR == 2
            // Eight values per chunk that the compiler cannot see through (distinct, so that no two sums fold into
            // one), in place of the chunk's shared loads; the multiply-adds below are then fused ones by force,
            // since the compiler would otherwise multiply the repeated pairs once and add the products.
            issue(chunk + BRAIN_TILE_STAGES - 1);
            float4 ao, bo;
            asm volatile("mov.b32 %0, %8;\n\tmov.b32 %1, %9;\n\tmov.b32 %2, %10;\n\tmov.b32 %3, %11;\n\t"
                         "mov.b32 %4, %12;\n\tmov.b32 %5, %13;\n\tmov.b32 %6, %14;\n\tmov.b32 %7, %15;"
                         : "=f"(ao.x), "=f"(ao.y), "=f"(ao.z), "=f"(ao.w), "=f"(bo.x), "=f"(bo.y), "=f"(bo.z),
                           "=f"(bo.w)
                         : "f"(1.0f), "f"(2.0f), "f"(3.0f), "f"(4.0f), "f"(5.0f), "f"(6.0f), "f"(7.0f), "f"(8.0f));
#pragma unroll
            for (unsigned l = 0; l < a_loads; ++l) av[l] = ao;
#pragma unroll
            for (unsigned l = 0; l < b_loads; ++l) bv[l] = bo;
#else
            const unsigned k0 = group * group_k;
#if BRAIN_FUSED_TILE_FLOOR == 3 || BRAIN_FUSED_TILE_FLOOR == 4
            // One operand's values from registers, as in the floor's form 2 (distinct per chunk).
            float4 ro;
            asm volatile("mov.b32 %0, %4;\n\tmov.b32 %1, %5;\n\tmov.b32 %2, %6;\n\tmov.b32 %3, %7;"
                         : "=f"(ro.x), "=f"(ro.y), "=f"(ro.z), "=f"(ro.w)
                         : "f"(1.0f + chunk), "f"(2.0f), "f"(3.0f), "f"(4.0f));
#endif
            // The shared loads of A's entry la and of B's entry lb.
            const auto load_a = [&](unsigned la) {
                const unsigned ka = AK ? (la % 4) * kq + la / 4 : la;
#if BRAIN_FUSED_TILE_FLOOR == 3
                av[ka] = ro;
#else
                av[ka] =
                    AK ? shared_load<vk>(&st.a[0][0] + (4 * ty + ka / kq) * BRAIN_TILE_PITCH + k0 + vk * (ka % kq))
                       : *reinterpret_cast<const float4*>(&st.a[k0 + ka][4 * ty]);
#endif
            };
            const auto load_b = [&](unsigned lb) {
                const unsigned kb = BK ? (lb % 4) * kq + lb / 4 : lb;
#if BRAIN_FUSED_TILE_FLOOR == 4
                bv[kb] = ro;
#else
                bv[kb] = BK ? shared_load<vk>(&st.b[0][0] + (tx + tx_count * (kb / kq)) * BRAIN_TILE_PITCH + k0 +
                                              vk * (kb % kq))
                            : *reinterpret_cast<const float4*>(&st.b[k0 + kb][4 * tx]);
#endif
            };
            if constexpr (a_loads == b_loads) {
#pragma unroll
                for (unsigned l = 0; l < a_loads; ++l) {
                    if (l == 1) issue(chunk + BRAIN_TILE_STAGES - 1);
                    load_a(l);
                    load_b(l);
                }
            } else { // a narrow delta tile: A k-major in float2s, B n-major in float4s
#pragma unroll
                for (unsigned l = 0; l < loads; ++l) {
                    if (l == 1) issue(chunk + BRAIN_TILE_STAGES - 1);
                    if (l < a_loads) load_a(l);
                    if (l < b_loads) load_b(l);
                }
            }
#endif
#pragma unroll
            for (unsigned kk = 0; kk < group_k; ++kk) {
#pragma unroll
                for (unsigned i = 0; i < 4; ++i) {
                    const float a = AK ? component(av[i * kq + kk / vk], kk % vk) : component(av[kk], i);
#pragma unroll
                    for (unsigned j = 0; j < 4; ++j) {
                        const float b = BK ? component(bv[j * kq + kk / vk], kk % vk) : component(bv[kk], j);
#if BRAIN_FUSED_TILE_FLOOR >= 2
                        acc[i][j] = __fmaf_rn(a, b, acc[i][j]); // one fused multiply-add each, as the tiles'
#else
                        acc[i][j] += a * b;
#endif
                    }
                }
            }
            if (bias) {
#pragma unroll
                for (unsigned kk = 0; kk < bias_k; ++kk) bias_sum += st.a[(tid / TM) * bias_k + kk][tid % TM];
            }
        }
        tile_stamp<KIND>(c, g, t, 4, false);
        tile_wait<0>();
        __syncthreads(); // every chunk has been multiplied: the stages become the partial sums
        float* partial = sh.partial + group * (TM * TN);
#pragma unroll
        for (unsigned i = 0; i < 4; ++i) {
            float* row = &partial[(4 * ty + i) * TN];
            if (BK) {
#pragma unroll
                for (unsigned j = 0; j < 4; ++j) row[tx + tx_count * j] = acc[i][j];
            } else {
                *reinterpret_cast<float4*>(row + 4 * tx) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
            }
        }
        if (bias) sh.bias[tid] = bias_sum;
        __syncthreads();
        tile_stamp<KIND>(c, g, t, 5, false);
        if (bias && tid < TM && m0 + tid < g.m) {
            float sum = sh.bias[tid];
#pragma unroll
            for (unsigned q = 1; q < bias_slices; ++q) sum += sh.bias[q * TM + tid];
            fused_gradient(c, g.layer->bias_offset + m0 + tid, sum, g.update);
        }
        // Each thread finishes its outputs, consecutive threads along a row so that the epilogues' stores coalesce.
#pragma unroll
        for (unsigned q = 0; q < outputs; ++q) {
            const unsigned e = tid + BRAIN_FUSED_THREADS * q, m = e / TN, n = e % TN;
            float sum = sh.partial[e];
#pragma unroll
            for (unsigned p = 1; p < groups; ++p) sum += sh.partial[p * (TM * TN) + e];
            float dot = 0.0f;
            if (m0 + m < g.m && n0 + n < g.n) dot = fused_epilogue<KIND>(c, g, m0 + m, n0 + n, sum, in[q]);
            if (KIND == FUSED_FORWARD && TN == BRAIN_TILE && g.head_dots) {
                // A warp holds one row of the tile: its share of the folded head's dot product, in lane order.
                dot = warp_sum(dot);
                if (tid % BRAIN_WARP == 0 && m0 + m < g.m)
                    g.head_dots[(brain_u64)(m0 + m) * g.head_tiles + n0 / BRAIN_TILE] = dot;
            }
        }
        tile_stamp<KIND>(c, g, t, 6, true);
    }
}

// Whether a GEMM goes to a warp per output (about as many outputs as the grid has warps) rather than to tiles.
static __device__ __forceinline__ bool fused_uses_warps(const FusedGemm& g) {
    return (brain_u64)g.m * g.n <= 2ull * gridDim.x * BRAIN_FUSED_WARPS;
}
// The blocks a GEMM keeps busy with a warp per output (none when it goes to tiles).
static __device__ __forceinline__ unsigned fused_warp_blocks(const FusedGemm& g) {
    return fused_uses_warps(g) ? (unsigned)(((brain_u64)g.m * g.n + BRAIN_FUSED_WARPS - 1) / BRAIN_FUSED_WARPS)
                               : 0u;
}
// The blocks a GEMM keeps busy (more than the grid when it takes several rounds): its warps' blocks, or its tiles
// of height tm. fused_gemm counts them itself beside each branch: through this helper ptxas orders the kernel
// differently, and only that form has been measured.
static __device__ __forceinline__ brain_u64 fused_busy_blocks(const FusedGemm& g, unsigned tm) {
    return fused_uses_warps(g) ? fused_warp_blocks(g) : tile_count(tm, g.m, g.n);
}
// What a GEMM counts towards its phase's choice of tile height: the tiles 16 high it would take, or the blocks its
// warp-per-output work keeps busy.
static __device__ __forceinline__ brain_u64 fused_half_tile_blocks(const FusedGemm& g) {
    return fused_uses_warps(g) ? fused_warp_blocks(g) : 2ull * tile_count(BRAIN_TILE, g.m, g.n);
}
// The tile height of a phase's GEMMs (`second` only `with_second`): 16 when their 32 x 32 tiles, doubled, and the
// blocks their warp-per-output work keeps busy still fit in the grid (with more tiles than that, two half tiles
// per block are slower than one full tile); 32 otherwise.
static __device__ __forceinline__ unsigned fused_phase_tile(const FusedGemm& first, const FusedGemm& second,
                                                            bool with_second) {
    return fused_half_tile_blocks(first) + (with_second ? fused_half_tile_blocks(second) : 0) <= gridDim.x
               ? BRAIN_TILE / 2
               : BRAIN_TILE;
}

// What turns a tile height into the other (16 into 32 and back) where bit l of `flips` is set: the plugin's choice
// for a backward phase whose two products are better in tiles of different heights (tile_height_plan.hpp). The
// phase's other decisions count its tiles at the phase's own height.
static __device__ __forceinline__ unsigned fused_tile_flip(uint32_t flips, unsigned l) {
    return ((flips >> l) & 1u) * (BRAIN_TILE ^ (BRAIN_TILE / 2));
}

// This block's place among the blocks of a job that starts on block `first` (fused_gemm's `first`): 0 on `first`,
// 1 on the next, wrapping around the grid.
static __device__ __forceinline__ unsigned fused_block_rank(unsigned first) {
    return (blockIdx.x + gridDim.x - first % gridDim.x) % gridDim.x;
}

// Runs one GEMM over the grid, in tiles of height tm (fused_phase_tile). Jobs of one phase are independent, so each
// starts where the previous one's blocks ended (`first`, advanced past the blocks this one keeps busy) instead of
// piling onto the first blocks.
// KIND: the product's FusedEpilogue (fused_gemm_tiles); NARROW: whether a forward or delta product may take narrow
// tiles (BRAIN_FUSED_NARROW_TILES; not in the kernels whose registers their code would spill).
template <int KIND, bool NARROW = false>
static __device__ void fused_gemm(const FusedContext& c, const FusedGemm& g, unsigned& first, TileShared& sh,
                                  unsigned tm) {
    const unsigned grid = gridDim.x;
    const unsigned rank = fused_block_rank(first);
    brain_u64 busy;
    if (fused_uses_warps(g)) {
        fused_gemm_warps<KIND>(c, g, rank);
        busy = fused_warp_blocks(g);
    } else if (tm == BRAIN_TILE / 2) {
#if BRAIN_FUSED_NARROW_TILES
        constexpr unsigned half = BRAIN_TILE / 2;
        if constexpr (KIND != FUSED_WEIGHT_GRADIENT && NARROW) {
            // `first` is where the phase's blocks so far end (0 for a forward product, the only one of its phase).
            const unsigned narrow = tile_count(half, g.m, g.n, half);
            if (!g.head_dots && first + narrow <= grid) {
                fused_gemm_tiles<half, KIND, half>(c, g, rank, sh);
                first = (first + narrow) % grid;
                return;
            }
        }
#endif
        fused_gemm_tiles<BRAIN_TILE / 2, KIND>(c, g, rank, sh);
        busy = tile_count(BRAIN_TILE / 2, g.m, g.n);
    } else {
        fused_gemm_tiles<BRAIN_TILE, KIND>(c, g, rank, sh);
        busy = tile_count(BRAIN_TILE, g.m, g.n);
    }
    first = (unsigned)((first + busy) % grid);
}

// Grid barrier micro-benchmark: what one grid-wide barrier costs on this GPU with the
// fused epoch kernel's layout (one 256-thread block per SM, a cooperative launch), for the kernel's barrier and for
// forms that acquire differently, spread the arrivals over several words or gather a cluster's blocks first. Each
// block writes a value before every barrier and checks its neighbour's after it, so a form that does not order
// memory shows errors.
//
//   nvcc -O3 -std=c++17 -arch=native tools/perf/grid_barrier.cu -o grid_barrier && ./grid_barrier [iterations]
//   (tools/perf/gpu-floors builds and runs it)
//
// Prints one line per form and round, then the kernel's form on 8 to all SMs' blocks: ns per barrier and the
// check's error count (0 but for the form marked (!), which has no acquire and shows that the check catches a
// missing one).
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>

#define CHECK(x)                                                                                                   \
    do {                                                                                                           \
        cudaError_t e_ = (x);                                                                                      \
        if (e_ != cudaSuccess) {                                                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));               \
            std::exit(1);                                                                                          \
        }                                                                                                          \
    } while (0)

constexpr unsigned kStride = 32; // words 128 bytes apart: separate L2 lines

// The fused kernel's barrier (plugins/cuda/kernels): one word, whose top bit flips when the last block arrives.
// ACQUIRE: after the polls, 2 (the kernel's form) one acquire load of the word, 1 one acquire-release fence, 0
// nothing (measurement only: no acquire, so the block may read stale data; shows what the acquire costs).
template <int ACQUIRE>
__device__ void barrier_kernel(unsigned* word) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
        unsigned seen, now;
        asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;" : "=r"(seen) : "l"(word), "r"(add) : "memory");
        do {
            asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(now) : "l"(word) : "memory");
        } while (((seen ^ now) & 0x80000000u) == 0);
        if (ACQUIRE == 1) asm volatile("fence.acq_rel.gpu;" ::: "memory");
        if (ACQUIRE == 2) asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(now) : "l"(word) : "memory");
    }
    __syncthreads();
}

// Counting words: block b adds 1 to word b % W (`red`, no value returned); barrier t (1, 2, ...) is passed when
// every word w holds at least t times its group's size, which warp 0's lanes check a word each. A parity bit per
// word would not do: a word's group can pass and flip it back before a block of another group has seen the flip.
template <unsigned W>
__device__ void barrier_words(unsigned* words, unsigned t) {
    __syncthreads();
    if (threadIdx.x < 32) {
        const unsigned lane = threadIdx.x, grid = gridDim.x;
        if (lane == 0)
            asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(words + (blockIdx.x % W) * kStride)
                         : "memory");
        const unsigned w = lane % W, target = t * (grid / W + (w < grid % W ? 1u : 0u));
        const unsigned* mine = words + w * kStride;
        unsigned now;
        do {
            asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(now) : "l"(mine) : "memory");
        } while (!__all_sync(0xffffffffu, (int)(now - target) >= 0));
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
    }
    __syncthreads();
}

// Blocks of a cluster meet at the cluster's hardware barrier first; its first block alone then arrives at the
// grid's word (one arrival per cluster) and every block polls that word for the flip of its top bit (the parity,
// kept per block: a block of a cluster that did not arrive has no atomic's old value to read it from).
__device__ void barrier_cluster_wait(unsigned* word, unsigned* parity_slot) {
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    __syncthreads();
    cluster.sync();
    if (threadIdx.x == 0) {
        const unsigned clusters = gridDim.x / cluster.num_blocks();
        const unsigned c = blockIdx.x / cluster.num_blocks();
        const unsigned parity = *parity_slot;
        if (cluster.block_rank() == 0) {
            const unsigned add = c == 0 ? 0x80000000u - (clusters - 1) : 1u;
            asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(word), "r"(add) : "memory");
        }
        unsigned now;
        do {
            asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(now) : "l"(word) : "memory");
        } while ((now & 0x80000000u) == parity);
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        *parity_slot = parity ^ 0x80000000u;
    }
    __syncthreads();
}

// Each form runs `iters` barriers; before barrier i every block writes i into its slot of buffer i % 2, after it
// reads its neighbour's and counts a mismatch as an error.
template <int FORM>
__global__ void run(unsigned* words, unsigned* slots, unsigned* parity, unsigned* errors, int iters) {
    extern __shared__ float pad[]; // keeps one block per SM
    const unsigned grid = gridDim.x, b = blockIdx.x;
    unsigned bad = 0;
    for (int i = 0; i < iters; ++i) {
        unsigned* buf = slots + (i & 1) * grid;
        if (threadIdx.x == 0) buf[b] = (unsigned)i;
        if constexpr (FORM == 1)
            barrier_kernel<1>(words);
        else if constexpr (FORM == 2)
            barrier_kernel<2>(words);
        else if constexpr (FORM == 3)
            barrier_kernel<0>(words);
        else if constexpr (FORM == 0)
            barrier_cluster_wait(words, parity + b);
        else
            barrier_words<FORM / 100>(words, (unsigned)i + 1);
        if (threadIdx.x == 0 && buf[(b + 1) % grid] != (unsigned)i) ++bad;
    }
    if (threadIdx.x == 0 && bad) atomicAdd(errors, bad);
    if (threadIdx.x == 0 && pad[0] == 12345.0f) errors[1] = 1; // keep pad
}

struct Buffers {
    unsigned* words;
    unsigned* slots;
    unsigned* parity;
    unsigned* errors;
    // Every form starts from zeroed words, parities and error counts (the slots need no reset).
    void reset() const {
        CHECK(cudaMemset(words, 0, 16 * kStride * sizeof(unsigned)));
        CHECK(cudaMemset(parity, 0, 1024 * sizeof(unsigned)));
        CHECK(cudaMemset(errors, 0, 2 * sizeof(unsigned)));
    }
};

template <int FORM>
static void time_form(const char* name, int sms, const Buffers& buf, int iters, unsigned cluster, size_t smem,
                      unsigned blocks = 0) {
    void* fn = (void*)run<FORM>;
    CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    if (cluster > 1) CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    const unsigned grid = blocks ? blocks : cluster > 1 ? (sms / cluster) * cluster : sms;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(256);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attrs[2];
    unsigned n = 0;
    attrs[n].id = cudaLaunchAttributeCooperative;
    attrs[n++].val.cooperative = 1;
    if (cluster > 1) {
        attrs[n].id = cudaLaunchAttributeClusterDimension;
        attrs[n].val.clusterDim.x = cluster;
        attrs[n].val.clusterDim.y = 1;
        attrs[n++].val.clusterDim.z = 1;
        int active = 0;
        cfg.attrs = attrs + 1;
        cfg.numAttrs = 1;
        if (cudaOccupancyMaxActiveClusters(&active, fn, &cfg) != cudaSuccess || active * (int)cluster < (int)grid) {
            std::printf("%-24s grid %3u: only %d clusters of %u fit at once; skipped\n", name, grid, active,
                        cluster);
            cudaGetLastError();
            return;
        }
    }
    cfg.attrs = attrs;
    cfg.numAttrs = n;
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    buf.reset();
    CHECK(cudaLaunchKernelEx(&cfg, run<FORM>, buf.words, buf.slots, buf.parity, buf.errors, 100)); // warm-up
    CHECK(cudaDeviceSynchronize());
    buf.reset();
    CHECK(cudaEventRecord(start));
    CHECK(cudaLaunchKernelEx(&cfg, run<FORM>, buf.words, buf.slots, buf.parity, buf.errors, iters));
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    unsigned errors[2];
    CHECK(cudaMemcpy(errors, buf.errors, sizeof errors, cudaMemcpyDeviceToHost));
    std::printf("%-24s grid %3u: %7.1f ns per barrier, %u errors\n", name, grid, 1e6 * ms / iters, errors[0]);
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
}

int main(int argc, char** argv) {
    const int iters = argc > 1 ? std::atoi(argv[1]) : 20000;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    const size_t smem = 120 * 1024;
    Buffers buf;
    CHECK(cudaMalloc(&buf.words, 16 * kStride * sizeof(unsigned)));
    CHECK(cudaMalloc(&buf.slots, 2 * 1024 * sizeof(unsigned)));
    CHECK(cudaMalloc(&buf.parity, 1024 * sizeof(unsigned)));
    CHECK(cudaMalloc(&buf.errors, 2 * sizeof(unsigned)));
    std::printf("%s, %d SMs, %d iterations\n", prop.name, sms, iters);
    for (int round = 0; round < 3; ++round) {
        time_form<1>("one word, acquire fence", sms, buf, iters, 1, smem);
        time_form<2>("one word, load (kernel's)", sms, buf, iters, 1, smem);
        time_form<3>("one word, no acquire (!)", sms, buf, iters, 1, smem);
        time_form<100>("1 counting word", sms, buf, iters, 1, smem);
        time_form<200>("2 counting words", sms, buf, iters, 1, smem);
        time_form<400>("4 counting words", sms, buf, iters, 1, smem);
        time_form<800>("8 counting words", sms, buf, iters, 1, smem);
        time_form<1600>("16 counting words", sms, buf, iters, 1, smem);
        time_form<0>("clusters of 2", sms, buf, iters, 2, smem);
        time_form<0>("clusters of 4", sms, buf, iters, 4, smem);
    }
    // The kernel's form on fewer blocks than SMs (BRAIN_CUDA_TEST_FUSED_GRID): what the arrivals' count costs.
    for (int round = 0; round < 3; ++round)
        for (const unsigned blocks : {8u, 16u, 24u, 32u, 48u, 64u, 96u, (unsigned)sms})
            if (blocks <= (unsigned)sms) time_form<2>("one word, fewer blocks", sms, buf, iters, 1, smem, blocks);
    return 0;
}

// brain::cuda::KernelModule: the plugin's kernels, compiled by NVRTC from the embedded source for one GPU
// architecture and loaded with the runtime's library API (no libcuda link). Compiled once per process per
// architecture and kept for the process's life.
#pragma once

#include "cuda_errors.hpp"

#include <cuda_runtime_api.h>
#include <future>
#include <string>
#include <vector>

namespace brain::cuda {

// Handles of every kernel in kernels/brain_kernels.cu and kernels/brain_fused_mlp.cu.
struct KernelModule {
    std::string architecture; // e.g. "sm_90"
    cudaKernel_t shuffle_permutation = nullptr;
    cudaKernel_t gather_batch = nullptr;
    cudaKernel_t bias_activation = nullptr;
    cudaKernel_t bias_softmax = nullptr;
    cudaKernel_t output_loss = nullptr;
    cudaKernel_t backprop_activation = nullptr;
    cudaKernel_t backprop_softmax = nullptr;
    cudaKernel_t column_sums = nullptr;
    cudaKernel_t finish_batch = nullptr;
    cudaKernel_t sgd_update = nullptr;
    cudaKernel_t adam_update = nullptr;
    cudaKernel_t finish_epoch = nullptr;
    cudaKernel_t fused_epoch = nullptr; // kernels/brain_fused_mlp.cu: a whole epoch, cooperative launch only
};

// The kernels for the current device (cudaSetDevice already called), compiling them on first use for its
// architecture. KERNEL_COMPILE_FAILED carries the NVRTC log; DEVICE_FAILURE if the cubin does not load.
// Thread-safe.
const KernelModule& kernels_for_current_device();

// What NVRTC (or the disk cache) produced for one architecture; a cached image that does not load is compiled
// again.
struct KernelImage {
    std::vector<char> bytes;
    bool from_cache = false;
};

// Starts producing the kernels' image for `device` (NVRTC or the disk cache, neither needs a CUDA context) on
// another thread, so that it overlaps the context's creation; kernels_for_current_device() then takes it. The
// destructor waits for that thread, so a set-up that fails in between leaves nothing running. Never throws: any
// failure surfaces from kernels_for_current_device().
class KernelPrefetch {
public:
    explicit KernelPrefetch(int device) noexcept;
    ~KernelPrefetch();
    KernelPrefetch(const KernelPrefetch&) = delete;
    KernelPrefetch& operator=(const KernelPrefetch&) = delete;

private:
    std::shared_future<KernelImage> m_image;
};

// Launch `kernel` on `stream` with exactly these arguments (their types must match the kernel's parameters).
template <class... Args>
void launch(cudaKernel_t kernel, dim3 grid, dim3 block, cudaStream_t stream, const char* name, Args... args) {
    void* params[] = {static_cast<void*>(&args)...};
    check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, params, 0, stream), name);
}

} // namespace brain::cuda

// brain::cuda::KernelModule: the plugin's kernels, compiled by NVRTC from the embedded kernel files for one GPU
// architecture and loaded with the runtime's library API (no libcuda link). Compiled once per process per
// architecture and kept for the process's life.
#pragma once

#include "cuda_errors.hpp"
#include "kernel_compiler.hpp"

#include <array>
#include <cstddef>
#include <cuda_runtime_api.h>
#include <future>
#include <string>
#include <vector>

namespace brain::cuda {

// The kernels' 64-bit integer parameter type (brain_u64 in the kernels).
using DeviceU64 = unsigned long long;

// Handles of every kernel (kernel_compiler.hpp's Kernel) for one architecture.
struct KernelModule {
    std::string architecture; // e.g. "sm_90"
    std::array<cudaKernel_t, kernel_count> kernels{};
    cudaKernel_t operator[](Kernel kernel) const noexcept { return kernels[static_cast<std::size_t>(kernel)]; }
};

// The kernels in `form` for the current device (cudaSetDevice already called), compiling them on first use for its
// architecture. KERNEL_COMPILE_FAILED carries the NVRTC log; DEVICE_FAILURE if the cubin does not load.
// Thread-safe.
const KernelModule& kernels_for_current_device(KernelForm form = KernelForm::Calls);

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
    KernelPrefetch(int device, KernelForm form) noexcept;
    ~KernelPrefetch();
    KernelPrefetch(const KernelPrefetch&) = delete;
    KernelPrefetch& operator=(const KernelPrefetch&) = delete;

private:
    std::shared_future<KernelImage> m_image;
};

// Launch `kernel` of `module` on `stream` with exactly these arguments (their types must match the kernel's
// parameters); a failure names the kernel.
template <class... Args>
void launch(const KernelModule& module, Kernel kernel, dim3 grid, dim3 block, cudaStream_t stream, Args... args) {
    void* params[] = {static_cast<void*>(&args)...};
    check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(module[kernel]), grid, block, params, 0, stream),
               kernel_name(kernel));
}

} // namespace brain::cuda

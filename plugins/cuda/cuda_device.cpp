#include "cuda_device.hpp"

#include "cuda_errors.hpp"
#include "cuda_handles.hpp"
#include "device_allocator.hpp"
#include "device_scalars.h"
#include "kernel_module.hpp"

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace brain::cuda {

namespace {

// Why the runtime could not reach the driver, in one sentence. The static runtime loads libcuda.so.1 itself;
// trying the same dlopen here recovers the loader's own text, which names the real cause.
[[noreturn]] void fail_without_driver(cudaError_t status) {
    const std::string runtime_error = "cudaGetDeviceCount: " + describe(status);
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!driver) {
        const char* why = dlerror();
        fail(BRAIN_ERR_DRIVER_UNAVAILABLE,
             std::string("no CUDA driver: libcuda.so.1 could not be loaded (") +
                 (why ? why : "unknown loader error") + "; " + runtime_error +
                 "); install the NVIDIA driver and check that nvidia-smi lists the GPU");
    }
    dlclose(driver);
    if (status == cudaErrorNoDevice)
        fail(BRAIN_ERR_DEVICE_NOT_FOUND, "the CUDA driver is loaded but reports no GPU (" + runtime_error +
                                             "); check that nvidia-smi lists one and that CUDA_VISIBLE_DEVICES "
                                             "does not hide it");
    int driver_version = 0, runtime_version = 0;
    (void)cudaDriverGetVersion(&driver_version);
    (void)cudaRuntimeGetVersion(&runtime_version);
    if (status == cudaErrorInsufficientDriver)
        fail(BRAIN_ERR_DRIVER_UNAVAILABLE,
             "the CUDA driver is too old: it supports CUDA " + std::to_string(driver_version / 1000) + "." +
                 std::to_string(driver_version % 1000 / 10) + " but this plugin's runtime needs CUDA " +
                 std::to_string(runtime_version / 1000) + "." + std::to_string(runtime_version % 1000 / 10) + " (" +
                 runtime_error + "); update the NVIDIA driver");
    fail(BRAIN_ERR_DRIVER_UNAVAILABLE,
         "the CUDA driver could not be initialised (" + runtime_error + "); check nvidia-smi and dmesg");
}

std::string mib_text(std::uint64_t bytes) {
    return std::to_string(bytes >> 20) + " MiB";
}

// cuBLAS computes a 2x3 by 3x2 product whose answer is known exactly.
void check_gemm() {
    const CublasHandle handle = create_cublas();
    DeviceAllocator allocator(0);
    const float a[6] = {1, 2, 3, 4, 5, 6};    // 2x3, row-major
    const float b[6] = {7, 8, 9, 10, 11, 12}; // 3x2, row-major
    const float expected[4] = {58, 64, 139, 154};
    DeviceBuffer da = allocator.allocate(sizeof a, MemoryKind::Workspace, "the GEMM check's A");
    DeviceBuffer db = allocator.allocate(sizeof b, MemoryKind::Workspace, "the GEMM check's B");
    DeviceBuffer dc = allocator.allocate(sizeof expected, MemoryKind::Workspace, "the GEMM check's C");
    check_cuda(cudaMemcpy(da.get(), a, sizeof a, cudaMemcpyHostToDevice), "cudaMemcpy (GEMM check)");
    check_cuda(cudaMemcpy(db.get(), b, sizeof b, cudaMemcpyHostToDevice), "cudaMemcpy (GEMM check)");
    const float one = 1.0f, zero = 0.0f;
    // Row-major C = A B is column-major C^T = B^T A^T.
    check_cublas(cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, db.floats(), 2, da.floats(), 3,
                             &zero, dc.floats(), 2),
                 "cublasSgemm (GEMM check)");
    float c[4] = {0, 0, 0, 0};
    check_cuda(cudaMemcpy(c, dc.get(), sizeof c, cudaMemcpyDeviceToHost), "cudaMemcpy (GEMM check)");
    for (int i = 0; i < 4; ++i)
        if (c[i] != expected[i])
            fail(BRAIN_ERR_GEMM_FAILED, "cuBLAS returned " + std::to_string(c[i]) + " for element " +
                                            std::to_string(i) + " of a 2x3 by 3x2 product whose answer is " +
                                            std::to_string(expected[i]));
}

// The NVRTC-compiled shuffle kernel must reproduce the host's brain_shuffle_index exactly.
std::string check_kernel() {
    const KernelModule& kernels = kernels_for_current_device();
    const Stream stream = create_stream();
    DeviceAllocator allocator(0);
    constexpr std::uint64_t n = 1000, seed = 0x5eedULL, epoch = 3;
    brain_cuda_scalars scalars{};
    scalars.epoch = epoch;
    DeviceBuffer dscalars = allocator.allocate(sizeof scalars, MemoryKind::Workspace, "the kernel check's scalars");
    DeviceBuffer dperm =
        allocator.allocate(n * sizeof(uint32_t), MemoryKind::Workspace, "the kernel check's output");
    check_cuda(cudaMemcpy(dscalars.get(), &scalars, sizeof scalars, cudaMemcpyHostToDevice), "cudaMemcpy");
    check_cuda(cudaMemset(dperm.get(), 0xff, n * sizeof(uint32_t)), "cudaMemset");
    launch(kernels, Kernel::ShufflePermutation, dim3(4), dim3(128), stream.get(),
           static_cast<uint32_t*>(dperm.get()), static_cast<DeviceU64>(n), static_cast<DeviceU64>(seed),
           static_cast<const brain_cuda_scalars*>(dscalars.get()));
    check_cuda(cudaStreamSynchronize(stream.get()), "the kernel check");
    std::vector<uint32_t> perm(n);
    check_cuda(cudaMemcpy(perm.data(), dperm.get(), n * sizeof(uint32_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
    for (std::uint64_t p = 0; p < n; ++p)
        if (perm[p] != brain_shuffle_index(seed, epoch, n, p))
            fail(BRAIN_ERR_DEVICE_FAILURE, "the compiled shuffle kernel put row " + std::to_string(perm[p]) +
                                               " at position " + std::to_string(p) + " where the host puts " +
                                               std::to_string(brain_shuffle_index(seed, epoch, n, p)));
    return kernels.architecture;
}

} // namespace

int device_count() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        (void)cudaGetLastError();
        fail_without_driver(status);
    }
    if (count == 0)
        fail(BRAIN_ERR_DEVICE_NOT_FOUND, "the CUDA driver reports no GPU; check that nvidia-smi lists one and "
                                         "that CUDA_VISIBLE_DEVICES does not hide it");
    return count;
}

void select_device(int device) {
    const int count = device_count();
    if (device < 0 || device >= count)
        fail(BRAIN_ERR_DEVICE_NOT_FOUND, "CUDA device " + std::to_string(device) +
                                             " does not exist: this machine has " + std::to_string(count) +
                                             (count == 1 ? " CUDA device" : " CUDA devices") +
                                             " (valid indices 0.." + std::to_string(count - 1) + ")");
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
}

brain_device_report probe_device(int device, std::uint64_t memory_budget_bytes) {
    select_device(device);
    brain_device_report report{};
    report.struct_size = sizeof report;
    cudaDeviceProp props{};
    check_cuda(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
    sdk::copy_string(report.name, props.name);
    sdk::copy_string(report.revision, std::to_string(props.major) + "." + std::to_string(props.minor));
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        report.total_memory_mib = static_cast<int64_t>(total_bytes >> 20);
        report.free_memory_mib = static_cast<int64_t>(free_bytes >> 20);
    } else {
        (void)cudaGetLastError();
        report.total_memory_mib = static_cast<int64_t>(props.totalGlobalMem >> 20);
        report.free_memory_mib = -1;
    }
    std::string notes;
    auto note = [&notes](const std::string& text) { notes += (notes.empty() ? "" : " ") + text; };
    try {
        check_gemm();
        report.gemm_available = 1;
    } catch (const sdk::Failure& failure) {
        note(std::string("cuBLAS check failed: ") + failure.what() + ".");
    }
    sdk::copy_string(report.gemm_check, "cuBLAS SGEMM, a 2x3 by 3x2 product");
    sdk::copy_string(report.kernel_check, "NVRTC-compiled shuffle kernel against the host");
    sdk::copy_string(report.allocation_check, "the whole budget on the device, written");
    try {
        (void)check_kernel();
        report.kernel_available = 1;
    } catch (const sdk::Failure& failure) {
        note(std::string("Kernel check failed: ") + failure.what() + ".");
    }
    if (memory_budget_bytes == 0) {
        note("Allocation test not run: no memory budget was given.");
    } else {
        void* block = nullptr;
        const cudaError_t status = cudaMalloc(&block, memory_budget_bytes);
        if (status == cudaSuccess) {
            // Touch it, so a lazily backed allocation is really there.
            const cudaError_t touch = cudaMemset(block, 0, memory_budget_bytes);
            const cudaError_t sync = cudaDeviceSynchronize();
            (void)cudaFree(block);
            if (touch == cudaSuccess && sync == cudaSuccess)
                report.allocation_test = 1;
            else
                note("Allocation test failed: the budget of " + mib_text(memory_budget_bytes) +
                     " was allocated but could not be written (" + describe(touch != cudaSuccess ? touch : sync) +
                     ").");
        } else {
            (void)cudaGetLastError();
            note("Allocation test failed: cudaMalloc of the whole budget (" + mib_text(memory_budget_bytes) +
                 ") returned " + describe(status) + " with " + mib_text(free_bytes) +
                 " free; lower the budget or free device memory.");
        }
    }
    sdk::copy_string(report.notes, notes);
    return report;
}

} // namespace brain::cuda

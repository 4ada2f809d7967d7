#include "kernel_module.hpp"

#include "cuda_embedded_sources.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace brain::cuda {

namespace {

// NVRTC has no C library headers of its own; the ABI header only needs these two, and the kernels include the
// ABI header exactly as the host does.
constexpr const char* stdint_header = R"(#pragma once
typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
)";
constexpr const char* stddef_header = R"(#pragma once
typedef decltype(sizeof(0)) size_t;
#ifndef NULL
#define NULL 0
#endif
)";

// Owns an nvrtcProgram.
class Program {
public:
    Program(const std::string& source, const char* name) {
        const char* headers[] = {stdint_header, stddef_header, embedded::abi_header, embedded::scalars_header};
        const char* names[] = {"stdint.h", "stddef.h", "brain/plugin_abi.h", "device_scalars.h"};
        check_nvrtc(nvrtcCreateProgram(&m_program, source.c_str(), name, 4, headers, names), "nvrtcCreateProgram");
    }
    ~Program() {
        if (m_program) (void)nvrtcDestroyProgram(&m_program);
    }
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;
    nvrtcProgram get() const noexcept { return m_program; }

    std::string log() const {
        std::size_t size = 0;
        if (nvrtcGetProgramLogSize(m_program, &size) != NVRTC_SUCCESS || size <= 1) return {};
        std::string text(size, '\0');
        if (nvrtcGetProgramLog(m_program, text.data()) != NVRTC_SUCCESS) return {};
        while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
        return text;
    }

private:
    nvrtcProgram m_program = nullptr;
};

// The architecture NVRTC compiles for: the device's own as a cubin when this NVRTC knows it, else the newest
// virtual architecture it knows below it, as PTX for the driver to finish (a newer GPU than the toolkit).
struct Target {
    std::string option;
    std::string label;
    bool cubin;
};

Target choose_target(int major, int minor) {
    const int wanted = major * 10 + minor;
    int count = 0;
    std::vector<int> archs;
    if (nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
        archs.resize(static_cast<std::size_t>(count));
        if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) archs.clear();
    }
    if (archs.empty() || std::find(archs.begin(), archs.end(), wanted) != archs.end())
        return {"--gpu-architecture=sm_" + std::to_string(wanted), "sm_" + std::to_string(wanted), true};
    int best = 0;
    for (int a : archs)
        if (a <= wanted) best = std::max(best, a);
    if (best == 0)
        fail(BRAIN_ERR_KERNEL_COMPILE_FAILED,
             "NVRTC " + std::to_string(archs.front()) + ".." + std::to_string(archs.back()) +
                 " cannot compile for this device's compute capability " + std::to_string(major) + "." +
                 std::to_string(minor) + "; install a CUDA toolkit that supports it");
    return {"--gpu-architecture=compute_" + std::to_string(best), "compute_" + std::to_string(best), false};
}

// The whole kernel text; BRAIN_CUDA_TEST_KERNEL_SUFFIX appends text (the tests use it to prove that a compile
// error surfaces as KernelCompileFailed with the NVRTC log).
std::string kernel_source() {
    std::string source = embedded::kernels;
    if (const char* suffix = std::getenv("BRAIN_CUDA_TEST_KERNEL_SUFFIX")) {
        source += "\n";
        source += suffix;
        source += "\n";
    }
    return source;
}

std::vector<char> compile(const std::string& source, const Target& target) {
    Program program(source, "brain_kernels.cu");
    const char* options[] = {target.option.c_str(), "--std=c++17", "--device-as-default-execution-space",
                             "--define-macro=BRAIN_CUDA_DEVICE_CODE=1"};
    const nvrtcResult status = nvrtcCompileProgram(program.get(), 4, options);
    if (status != NVRTC_SUCCESS)
        fail(BRAIN_ERR_KERNEL_COMPILE_FAILED, "NVRTC could not compile the CUDA kernels for " + target.label + " (" +
                                                  nvrtcGetErrorString(status) + "); NVRTC log: " + program.log());
    std::size_t size = 0;
    std::vector<char> image;
    if (target.cubin) {
        check_nvrtc(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
        image.resize(size);
        check_nvrtc(nvrtcGetCUBIN(program.get(), image.data()), "nvrtcGetCUBIN");
    } else {
        check_nvrtc(nvrtcGetPTXSize(program.get(), &size), "nvrtcGetPTXSize");
        image.resize(size);
        check_nvrtc(nvrtcGetPTX(program.get(), image.data()), "nvrtcGetPTX");
    }
    return image;
}

cudaKernel_t get_kernel(cudaLibrary_t library, const char* name) {
    cudaKernel_t kernel = nullptr;
    check_cuda(cudaLibraryGetKernel(&kernel, library, name), name);
    return kernel;
}

std::unique_ptr<KernelModule> build_module(int major, int minor) {
    const Target target = choose_target(major, minor);
    const std::vector<char> image = compile(kernel_source(), target);
    cudaLibrary_t library = nullptr;
    check_cuda(cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
               "cudaLibraryLoadData (the NVRTC-compiled kernels)");
    // The library is deliberately never unloaded: kernels may be referenced by captured graphs until the
    // process exits, and unloading during static destruction races the runtime's own teardown.
    auto module = std::make_unique<KernelModule>();
    module->architecture = target.label;
    module->shuffle_permutation = get_kernel(library, "brain_shuffle_permutation");
    module->gather_batch = get_kernel(library, "brain_gather_batch");
    module->bias_activation = get_kernel(library, "brain_bias_activation");
    module->bias_softmax = get_kernel(library, "brain_bias_softmax");
    module->output_loss = get_kernel(library, "brain_output_loss");
    module->backprop_activation = get_kernel(library, "brain_backprop_activation");
    module->backprop_softmax = get_kernel(library, "brain_backprop_softmax");
    module->column_sums = get_kernel(library, "brain_column_sums");
    module->finish_batch = get_kernel(library, "brain_finish_batch");
    module->sgd_update = get_kernel(library, "brain_sgd_update");
    module->adam_update = get_kernel(library, "brain_adam_update");
    module->finish_epoch = get_kernel(library, "brain_finish_epoch");
    return module;
}

} // namespace

const KernelModule& kernels_for_current_device() {
    int device = 0, major = 0, minor = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
    check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
    // Keyed by architecture and source (the test suffix changes the source); intentionally leaked, see above.
    static std::mutex mutex;
    static auto* cache = new std::map<std::pair<int, std::string>, std::unique_ptr<KernelModule>>();
    const std::string source = kernel_source();
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = (*cache)[{major * 10 + minor, source}];
    if (!slot) slot = build_module(major, minor);
    return *slot;
}

} // namespace brain::cuda

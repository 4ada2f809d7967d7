#include "kernel_compiler.hpp"

#include "cuda_embedded_sources.hpp"
#include "test_hooks.hpp"

#include <algorithm>
#include <brain/plugin_sdk.hpp>

namespace brain::cuda {

void check_nvrtc(nvrtcResult status, const char* what) {
    if (status == NVRTC_SUCCESS) return;
    throw sdk::Failure(BRAIN_ERR_KERNEL_COMPILE_FAILED,
                       std::string(what) + " failed: " + nvrtcGetErrorString(status));
}

namespace {

// NVRTC has no C library headers of its own; the ABI header only needs these two, and the kernels include the
// ABI header exactly as the host does. The kernel files and the headers they share with the host are embedded
// (embedded::files) and given to NVRTC by the names they include each other by.
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
        std::vector<const char*> headers = {stdint_header, stddef_header}, names = {"stdint.h", "stddef.h"};
        for (const embedded::File& file : embedded::files) {
            headers.push_back(file.text);
            names.push_back(file.name);
        }
        check_nvrtc(nvrtcCreateProgram(&m_program, source.c_str(), name, static_cast<int>(headers.size()),
                                       headers.data(), names.data()),
                    "nvrtcCreateProgram");
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

} // namespace

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
        throw sdk::Failure(BRAIN_ERR_KERNEL_COMPILE_FAILED,
                           "NVRTC " + std::to_string(archs.front()) + ".." + std::to_string(archs.back()) +
                               " cannot compile for this device's compute capability " + std::to_string(major) +
                               "." + std::to_string(minor) + "; install a CUDA toolkit that supports it");
    return {"--gpu-architecture=compute_" + std::to_string(best), "compute_" + std::to_string(best), false};
}

KernelForm kernel_form(const std::vector<sdk::LayerPlan>& layers) noexcept {
    for (const sdk::LayerPlan& layer : layers)
        if (layer.activation == BRAIN_ACT_SIGMOID || layer.activation == BRAIN_ACT_TANH ||
            layer.activation == BRAIN_ACT_GELU)
            return KernelForm::InlineActivations;
    return KernelForm::Calls;
}

std::string kernel_source(KernelForm form) {
    return std::string(form == KernelForm::InlineActivations ? "#define BRAIN_KERNEL_INLINE_ACTIVATIONS 1\n" : "") +
           test_kernel_defines() +
           "#include \"layer_kernels.cu\"\n#include \"mixed_kernels.cu\"\n#include \"fused_epoch.cu\"\n"
           "#include \"cluster_epoch.cu\"\n" +
           test_kernel_suffix();
}

std::string kernel_text(const std::string& source) {
    std::string text = source;
    for (const embedded::File& file : embedded::files) {
        text += '\0';
        text += file.name;
        text += '\0';
        text += file.text;
    }
    return text;
}

std::vector<std::string> compile_options(const Target& target) {
    return {target.option, "--std=c++17", "--device-as-default-execution-space",
            "--define-macro=BRAIN_CUDA_DEVICE_CODE=1"};
}

std::vector<char> compile(const std::string& source, const Target& target,
                          const std::vector<std::string>& extra_options, std::string* log) {
    Program program(source, "kernels.cu");
    std::vector<std::string> options = compile_options(target);
    options.insert(options.end(), extra_options.begin(), extra_options.end());
    std::vector<const char*> pointers;
    for (const std::string& option : options) pointers.push_back(option.c_str());
    const nvrtcResult status =
        nvrtcCompileProgram(program.get(), static_cast<int>(pointers.size()), pointers.data());
    if (log) *log = program.log();
    if (status != NVRTC_SUCCESS)
        throw sdk::Failure(BRAIN_ERR_KERNEL_COMPILE_FAILED, "NVRTC could not compile the CUDA kernels for " +
                                                                target.label + " (" + nvrtcGetErrorString(status) +
                                                                "); NVRTC log: " + program.log());
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

} // namespace brain::cuda

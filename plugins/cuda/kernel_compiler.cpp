#include "kernel_compiler.hpp"

#include "cuda_embedded_sources.hpp"

#include <algorithm>
#include <brain/plugin_sdk.hpp>
#include <cctype>
#include <cstdlib>

namespace brain::cuda {

void check_nvrtc(nvrtcResult status, const char* what) {
    if (status == NVRTC_SUCCESS) return;
    throw sdk::Failure(BRAIN_ERR_KERNEL_COMPILE_FAILED,
                       std::string(what) + " failed: " + nvrtcGetErrorString(status));
}

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

std::string kernel_source() {
    std::string source;
    // Tuning experiments: NAME=VALUE pairs become #define lines ahead of the kernels (whose switches are
    // #ifndef'd), so one build can measure several variants; the source is part of the cache key, so each gets its
    // own entry.
    if (const char* defines = std::getenv("BRAIN_CUDA_KERNEL_DEFINES")) {
        std::string list = defines;
        for (std::size_t at = 0; at <= list.size();) {
            const std::size_t end = std::min(list.find(',', at), list.size());
            const std::string item = list.substr(at, end - at);
            at = end + 1;
            if (item.empty()) continue;
            const std::size_t eq = item.find('=');
            const std::string name = item.substr(0, eq);
            const bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                               std::all_of(name.begin(), name.end(), [](char ch) {
                                   return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
                               });
            if (!valid || item.find('\n') != std::string::npos)
                throw sdk::Failure(BRAIN_ERR_INVALID_ARGUMENT,
                                   "BRAIN_CUDA_KERNEL_DEFINES: expected NAME=VALUE items separated "
                                   "by commas, found '" +
                                       item + "'; unset it or fix that item");
            source += "#define ";
            source += name;
            if (eq != std::string::npos) {
                source += ' ';
                source.append(item, eq + 1, std::string::npos);
            }
            source += '\n';
        }
    }
    // The fused epoch kernel uses the per-operation kernels' device functions and runs the products of
    // brain_fused_gemm.cu, so they come in this order.
    source += embedded::kernels;
    source += "\n";
    source += embedded::fused_gemm;
    source += "\n";
    source += embedded::fused_kernels;
    if (const char* suffix = std::getenv("BRAIN_CUDA_TEST_KERNEL_SUFFIX")) {
        source += "\n";
        source += suffix;
        source += "\n";
    }
    return source;
}

std::vector<std::string> compile_options(const Target& target) {
    return {target.option, "--std=c++17", "--device-as-default-execution-space",
            "--define-macro=BRAIN_CUDA_DEVICE_CODE=1"};
}

std::vector<char> compile(const std::string& source, const Target& target,
                          const std::vector<std::string>& extra_options, std::string* log) {
    Program program(source, "brain_kernels.cu");
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

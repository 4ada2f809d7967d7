// brain::cuda kernel compilation: the plugin's embedded kernel text (kernels/*.cu) compiled by NVRTC for one GPU
// architecture. Needs neither a GPU nor the CUDA runtime, so the tests compile the kernels on machines without one.
#pragma once

#include <nvrtc.h>
#include <string>
#include <vector>

namespace brain::cuda {

// Throw sdk::Failure(KERNEL_COMPILE_FAILED) unless status is NVRTC_SUCCESS; the message names the call (`what`).
void check_nvrtc(nvrtcResult status, const char* what);

// What NVRTC compiles for: its --gpu-architecture option, a label ("sm_90", "compute_90") and whether the result
// is a cubin (else PTX, which the driver finishes).
struct Target {
    std::string option;
    std::string label;
    bool cubin;
};

// The device's own architecture as a cubin when this NVRTC knows it, else the newest virtual architecture it knows
// below it, as PTX (a GPU newer than the toolkit). Throws KERNEL_COMPILE_FAILED when it knows none at or below.
Target choose_target(int major, int minor);

// The whole kernel text: kernels/brain_kernels.cu, then kernels/brain_fused_gemm.cu and kernels/brain_fused_mlp.cu
// (which use its device functions), then BRAIN_CUDA_TEST_KERNEL_SUFFIX when set (the tests provoke compile errors
// with it).
std::string kernel_source();

// The plugin's NVRTC options for `target`: architecture, C++17, device code by default, BRAIN_CUDA_DEVICE_CODE.
std::vector<std::string> compile_options(const Target& target);

// Compiles `source` for `target` with compile_options(target) and then `extra_options`; returns the cubin or PTX
// (caller owns it). `log`, when not null, receives NVRTC's log. Throws KERNEL_COMPILE_FAILED, with the log, when
// the source does not compile.
std::vector<char> compile(const std::string& source, const Target& target,
                          const std::vector<std::string>& extra_options = {}, std::string* log = nullptr);

} // namespace brain::cuda

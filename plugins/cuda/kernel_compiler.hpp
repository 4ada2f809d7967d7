// brain::cuda kernel compilation: the plugin's embedded kernel files (kernels/) compiled by NVRTC for one GPU
// architecture. Needs neither a GPU nor the CUDA runtime, so the tests compile the kernels on machines without one.
#pragma once

#include <array>
#include <brain/session_plan.hpp>
#include <cstddef>
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

// Every kernel the plugin launches (kernels/layer_kernels.cu, kernels/mixed_kernels.cu, kernels/fused_epoch.cu,
// kernels/cluster_epoch.cu).
enum class Kernel {
    ShufflePermutation,
    GatherBatch,
    BiasActivation,
    BiasSoftmax,
    OutputLoss,
    BackpropActivation,
    BackpropSoftmax,
    ColumnSums,
    FinishBatch,
    SgdUpdate,
    AdamUpdate,
    FinishEpoch,
    GatherBatchBf16, // kernels/mixed_kernels.cu: the mixed-precision path and the predictor
    ConvertBf16,
    BiasActivationBf16,
    OutputLossBf16,
    BackpropActivationBf16,
    ColumnSumsBf16,
    FlagNonFinite,
    FusedEpoch,             // a whole epoch, cooperative launch only
    FusedEpochShares,       // the same, with weight gradients in row shares (brain_fused_epoch_args::row_shares)
    ClusterEpoch,           // a whole epoch of a small network on one block cluster (kernels/cluster_epoch.cu)
    FusedEpochHeadRows,     // the fused epoch with a batch row per block in its loss phase (batch <= grid)
    FusedEpochFolded,       // the fused epoch with a one-output head folded into the phases beside it
    FusedEpochFoldedShares, // the same, with weight gradients in row shares
};
inline constexpr std::size_t kernel_count = static_cast<std::size_t>(Kernel::FusedEpochFoldedShares) + 1;

// Each kernel's name in the kernel source, in the order of Kernel.
inline constexpr std::array<const char*, kernel_count> kernel_names = {"brain_shuffle_permutation",
                                                                       "brain_gather_batch",
                                                                       "brain_bias_activation",
                                                                       "brain_bias_softmax",
                                                                       "brain_output_loss",
                                                                       "brain_backprop_activation",
                                                                       "brain_backprop_softmax",
                                                                       "brain_column_sums",
                                                                       "brain_finish_batch",
                                                                       "brain_sgd_update",
                                                                       "brain_adam_update",
                                                                       "brain_finish_epoch",
                                                                       "brain_gather_batch_bf16",
                                                                       "brain_convert_bf16",
                                                                       "brain_bias_activation_bf16",
                                                                       "brain_output_loss_bf16",
                                                                       "brain_backprop_activation_bf16",
                                                                       "brain_column_sums_bf16",
                                                                       "brain_flag_non_finite",
                                                                       "brain_fused_epoch",
                                                                       "brain_fused_epoch_shares",
                                                                       "brain_cluster_epoch",
                                                                       "brain_fused_epoch_head_rows",
                                                                       "brain_fused_epoch_folded",
                                                                       "brain_fused_epoch_folded_shares"};

// The kernel's name in the kernel source.
inline const char* kernel_name(Kernel kernel) noexcept {
    return kernel_names[static_cast<std::size_t>(kernel)];
}

// The program's two forms. The fused epoch kernel's epilogues call sigmoid, tanh and GELU out of line (Calls), or
// compute them inline (InlineActivations: BRAIN_FUSED_EPILOGUE_INLINE's default becomes 2), which shortens the
// steps of networks that have one of them and lengthens those of networks that have none (docs/cuda-plugin.md).
enum class KernelForm { Calls, InlineActivations };

// The form for a network of `layers`: InlineActivations when any layer is sigmoid, tanh or GELU.
KernelForm kernel_form(const std::vector<sdk::LayerPlan>& layers) noexcept;

// The program NVRTC compiles in `form`: it includes the kernel files by name (compile() gives them to NVRTC as
// headers). Test builds put BRAIN_CUDA_KERNEL_DEFINES's #define lines ahead and BRAIN_CUDA_TEST_KERNEL_SUFFIX after
// (test_hooks.hpp).
std::string kernel_source(KernelForm form = KernelForm::Calls);

// `source` followed by every file it may include, name and text: what decides the compiled image (with the options
// and target), so a disk-cache entry keyed by it is never stale.
std::string kernel_text(const std::string& source);

// The plugin's NVRTC options for `target`: architecture, C++17, device code by default, BRAIN_CUDA_DEVICE_CODE.
std::vector<std::string> compile_options(const Target& target);

// Compiles `source` for `target` with compile_options(target) and then `extra_options`; returns the cubin or PTX
// (caller owns it). `log`, when not null, receives NVRTC's log. Throws KERNEL_COMPILE_FAILED, with the log, when
// the source does not compile.
std::vector<char> compile(const std::string& source, const Target& target,
                          const std::vector<std::string>& extra_options = {}, std::string* log = nullptr);

} // namespace brain::cuda

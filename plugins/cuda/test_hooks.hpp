// The plugin's test hooks, compiled only into test builds (the CMake option BRAIN_TEST_HOOKS): fault injection,
// kernel text from the environment and the fused epoch's phase profile. In any other build each hook is a constant
// that folds away, so a packaged plugin reads none of these variables (docs/reliability.md, docs/cuda-plugin.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace brain::cuda {

// The calls a test can make fail.
enum class Fault { Alloc = 0, Gemm = 1, Device = 2 };

#if BRAIN_TEST_HOOKS

inline constexpr bool test_hooks_enabled = true;

// BRAIN_CUDA_TEST_FAULT: "alloc:N" makes the N-th device allocation of the process fail as
// cudaErrorMemoryAllocation would, "gemm:N" the N-th matrix product as CUBLAS_STATUS_EXECUTION_FAILED, "device:N"
// the N-th checked CUDA call as cudaErrorLaunchFailure. Counting restarts whenever the variable's value changes.
// True when this call of kind `fault` is the one to fail. Thread-safe; cheap when unset.
bool inject_fault(Fault fault) noexcept;

// BRAIN_CUDA_KERNEL_DEFINES=NAME=VALUE,...: a "#define NAME VALUE" line per item, to go ahead of the kernels (whose
// switches are #ifndef'd; docs/cuda-plugin.md). INVALID_ARGUMENT naming an item whose name is not an identifier or
// that holds a newline.
std::string test_kernel_defines();

// BRAIN_CUDA_TEST_KERNEL_SUFFIX: text to go after the kernels (the tests provoke compile errors with it).
std::string test_kernel_suffix();

// BRAIN_CUDA_TEST_HEAD_SHARES=0: the fused epoch gets no room for a narrow head's gradient shares, as when the
// memory budget has none, so that its head takes a backward phase of its own.
bool test_withhold_head_shares() noexcept;
// BRAIN_CUDA_TEST_HEAD_ROWS=0: the fused epoch never takes the kernel whose loss phase gives each block a few batch
// rows (brain_fused_epoch_head_rows), so that measurements and tests can compare it with a warp per row.
bool test_withhold_head_rows() noexcept;
// BRAIN_CUDA_TEST_TILE_HEIGHTS=0: the fused epoch's backward phases keep one tile height for both products
// (tile_height_plan.hpp's plan withheld), so that measurements can compare the two with the same kernel.
bool test_withhold_tile_heights() noexcept;
// BRAIN_CUDA_TEST_CLUSTER_EPOCH=0: the automatic choice never takes the cluster epoch kernel
// (BRAIN_CUDA_FUSED=cluster still does), so that measurements can compare it with the path taken without it.
bool test_withhold_cluster_epoch() noexcept;
// BRAIN_CUDA_TEST_CLUSTER_BLOCKS=4, 8 or 16: the cluster epoch kernel's cluster size, instead of the largest the
// device runs; 0 when unset or another value.
unsigned test_cluster_blocks() noexcept;
// BRAIN_CUDA_TEST_CLUSTERS=N (1 to 64): the cluster epoch kernel runs on at most N clusters (1: one cluster with
// slices as long as the batch makes them, as before long batches ran on several); 0 when unset or out of range.
unsigned test_max_clusters() noexcept;
// BRAIN_CUDA_TEST_CLUSTER_GRADS=global: the cluster epoch kernel keeps its gradient shares in global memory also
// where they fit in shared memory, so that the tests run that layout on small networks.
bool test_cluster_global_grads() noexcept;
// BRAIN_CUDA_TEST_FUSED_GRID=N (1 to 1024): the fused epoch kernel runs on N blocks, or one per SM where the device
// has fewer, instead of one per SM, so that measurements can see what a smaller grid costs; 0 when unset or out of
// range.
unsigned test_fused_grid() noexcept;

// BRAIN_CUDA_TEST_PREDICT_PARTS=N (1 to 8): a predictor takes its calls in N parts instead of its rule's, so that
// measurements can compare part sizes; 0 when unset or out of range.
unsigned test_predict_parts() noexcept;

// BRAIN_CUDA_TEST_PREDICT_TUNE=0: a predictor keeps the heuristics' first algorithm for each product instead of
// timing the candidates, so that measurements can compare the two.
bool test_predict_untuned() noexcept;

// BRAIN_CUDA_TEST_PREDICT_TIMELINE=1: each predictor call logs (debug level) when its parts' copies and products
// ran on the device and how the host spent the call, so that measurements can see which step holds a call.
bool test_predict_timeline() noexcept;

// BRAIN_CUDA_FUSED_PROFILE=1: the fused epoch kernel stamps the phases of the epoch's second step, and the session
// logs them (fused_profile_text).
bool test_fused_profile_requested() noexcept;

// The log line of a phase profile: `stamps` (BRAIN_FUSED_PROFILE_SLOTS nanosecond stamps) of a network of `layers`.
std::string fused_profile_text(const std::uint64_t* stamps, std::size_t layers);
// The same for the cluster epoch kernel's stamps.
std::string cluster_profile_text(const std::uint64_t* stamps);

#else

inline constexpr bool test_hooks_enabled = false;
constexpr bool inject_fault(Fault) noexcept {
    return false;
}
inline std::string test_kernel_defines() {
    return {};
}
inline std::string test_kernel_suffix() {
    return {};
}
constexpr bool test_withhold_head_shares() noexcept {
    return false;
}
constexpr bool test_withhold_head_rows() noexcept {
    return false;
}
constexpr bool test_withhold_tile_heights() noexcept {
    return false;
}
constexpr bool test_withhold_cluster_epoch() noexcept {
    return false;
}
constexpr unsigned test_cluster_blocks() noexcept {
    return 0;
}
constexpr unsigned test_max_clusters() noexcept {
    return 0;
}
constexpr bool test_cluster_global_grads() noexcept {
    return false;
}
constexpr unsigned test_fused_grid() noexcept {
    return 0;
}
constexpr unsigned test_predict_parts() noexcept {
    return 0;
}
constexpr bool test_predict_untuned() noexcept {
    return false;
}
constexpr bool test_predict_timeline() noexcept {
    return false;
}
constexpr bool test_fused_profile_requested() noexcept {
    return false;
}
inline std::string cluster_profile_text(const std::uint64_t*) {
    return {};
}
inline std::string fused_profile_text(const std::uint64_t*, std::size_t) {
    return {};
}

#endif

} // namespace brain::cuda

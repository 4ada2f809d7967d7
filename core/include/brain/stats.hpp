// brain::AcceleratorStats and brain::AcceleratorReport: what a session did and what a device can do.
#pragma once

#include <brain/export.hpp>

#include <brain/types.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace brain {

// What a TrainingSession did, measured by the backend (the chapter's AcceleratorStats, plus three fields).
struct AcceleratorStats {
    std::uint64_t peak_allocated_bytes = 0; // tensors: parameters, gradients, optimizer state, batch buffers
    std::chrono::nanoseconds setup_time{0};
    std::chrono::nanoseconds training_time{0};
    std::chrono::nanoseconds checkpoint_time{0};
    std::uint64_t epochs = 0;
    std::uint64_t batches = 0;
    std::uint64_t host_to_device_bytes = 0;
    std::uint64_t device_to_host_bytes = 0;
    bool dataset_resident = false;
    Precision precision = Precision::Float32;
    std::uint64_t dataset_bytes = 0;   // device memory holding the data set or its staging buffers
    std::uint64_t workspace_bytes = 0; // library workspaces charged to the budget
    std::uint64_t budget_bytes = 0;    // 0: no budget
    // Data parallelism (ABI 1.2): the devices the session trains on in this process (1 otherwise), the gradient
    // bytes it summed across devices, and the time those sums took that the backward pass did not hide.
    std::uint32_t devices = 1;
    std::uint64_t allreduce_bytes = 0;
    std::chrono::nanoseconds allreduce_time{0};
    // What ran, in the plugin's words (e.g. "bf16 mixed, float32 master weights (cuBLASLt)"); empty when the plugin
    // does not say (ABI 1.0 and 1.1).
    std::string arithmetic;
};

// Chapter-style multi-line rendering ("AcceleratorStats { peak_allocated_bytes: ..., ... }").
BRAIN_API std::ostream& operator<<(std::ostream& out, const AcceleratorStats& stats);
// One-line JSON object of every field (times in seconds).
BRAIN_API std::string to_json(const AcceleratorStats& stats);

// What accelerator_doctor found (the chapter's fields; free memory may be unknown).
struct AcceleratorReport {
    std::string backend;  // e.g. "cuda:0"
    std::string name;     // device name
    std::string revision; // e.g. compute capability "9.0"
    std::int64_t total_memory_mib = 0;
    std::optional<std::int64_t> free_memory_mib;
    bool gemm_available = false;
    bool kernel_available = false;
    bool allocation_test = false;
    std::string notes; // why a check failed; empty when all passed
    // What each check ran, in the plugin's words (empty when the plugin does not say, e.g. before ABI 1.2).
    std::string gemm_check;       // e.g. "cuBLAS SGEMM, a 2x3 by 3x2 product"
    std::string kernel_check;     // e.g. "NVRTC-compiled shuffle kernel (sm_90)"
    std::string allocation_check; // e.g. "the whole budget on the device", "64 MiB of host memory"
};

// The chapter's four lines ("NAME (REV), N MiB total, Some(F) MiB free", "gemm:    true  (cuBLAS SGEMM, ...)",
// "kernels: ...", "alloc:   ..."), each check followed by what the plugin says it ran.
BRAIN_API std::ostream& operator<<(std::ostream& out, const AcceleratorReport& report);

} // namespace brain

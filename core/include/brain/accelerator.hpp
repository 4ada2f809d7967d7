// accelerator_doctor and estimate_tensor_memory_mib: the chapter's pre-flight checks.
#pragma once

#include <brain/backend.hpp>
#include <brain/export.hpp>
#include <brain/network.hpp>
#include <brain/stats.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace brain {

// Probe the backend's device under its budget: name, revision, memory, and real GEMM, kernel and allocation
// tests. std::nullopt for the CPU backend without a budget (nothing to probe); with one, the CPU plugin reports
// host memory, a BLAS product and whether the budget can really be allocated. Throws the plugin's error (e.g.
// DriverUnavailable, DeviceNotFound, MetalFeatureDisabled) when the device cannot be probed at all.
BRAIN_API std::optional<AcceleratorReport> accelerator_doctor(const TrainingBackend& backend);

// Upper bound, in bytes, of the tensors a session allocates for this network and batch size: four copies of
// every parameter (weights, gradients, two optimizer moments), the batch's inputs and targets, and for each
// layer its pre-activations, activations and deltas, plus a fixed 64 KiB for scalars and alignment. Computed by the
// SDK's brain/session_budget.hpp (sdk::estimate_tensor_bytes), which plugins use: the two agree byte for byte. The
// data set is not part of it (the residency rule is stated in that header). Saturates at UINT64_MAX instead of
// overflowing (see estimate_tensor_memory).
BRAIN_API std::uint64_t estimate_tensor_memory_bytes(const Network& network, std::size_t batch_size);
// The same bound for a session computing in `precision`. Float32 and Tf32 give the function above; Bf16 (mixed
// precision) counts float32 parameters, gradients and two optimizer moments plus a bf16 copy of the parameters,
// each layer's weights and biases padded to 128 values, and per batch row the bf16 inputs, float32 targets, each
// hidden layer's bf16 pre-activations and activations, two bf16 delta buffers as wide as the widest layer, and the
// output layer's float32 pre-activations, activations and deltas, plus 64 KiB.
BRAIN_API std::uint64_t estimate_tensor_memory_bytes(const Network& network, std::size_t batch_size,
                                                     Precision precision);
// The same, rounded up to whole MiB (the chapter's function).
BRAIN_API std::uint64_t estimate_tensor_memory_mib(const Network& network, std::size_t batch_size);
// The same in `precision`, rounded up to whole MiB.
BRAIN_API std::uint64_t estimate_tensor_memory_mib(const Network& network, std::size_t batch_size,
                                                   Precision precision);
// The largest batch size whose estimate fits in budget_bytes (0 if none does).
BRAIN_API std::size_t largest_batch_within(const Network& network, std::uint64_t budget_bytes);
// The largest batch size whose estimate in `precision` fits in budget_bytes (0 if none does).
BRAIN_API std::size_t largest_batch_within(const Network& network, std::uint64_t budget_bytes, Precision precision);

// A tensor-memory estimate computed from a network's shape in 64-bit arithmetic that saturates instead of
// overflowing, so that any shape and batch size give an answer that is true or says "more than".
struct BRAIN_API MemoryEstimate {
    std::uint64_t parameter_count = 0; // weights and biases (UINT64_MAX when saturated)
    std::uint64_t bytes = 0;           // as estimate_tensor_memory_bytes (UINT64_MAX when saturated)
    bool saturated = false;            // the true figure exceeds 2^64 - 1 bytes (16 EiB)
    // bytes rounded up to whole MiB.
    std::uint64_t mib() const noexcept;
};

// The estimate for layers that chain (each layer's inputs are the previous layer's outputs) with widths in
// [1, 2^32 - 1], without building, allocating or initialising a network: instant for any shape. Throws
// InvalidArgument naming the layer for a shape no network can have, and for a batch size of 0.
BRAIN_API MemoryEstimate estimate_tensor_memory(const std::vector<LayerSpec>& layers, std::uint64_t batch_size);
// The largest batch size whose estimate fits in budget_bytes (0 if none does), from the shape alone.
BRAIN_API std::uint64_t largest_batch_within(const std::vector<LayerSpec>& layers, std::uint64_t budget_bytes);
// The estimate for a session computing in `precision` (estimate_tensor_memory_bytes with a precision says what it
// counts), from the shape alone and saturating likewise.
BRAIN_API MemoryEstimate estimate_tensor_memory(const std::vector<LayerSpec>& layers, std::uint64_t batch_size,
                                                Precision precision);
// The largest batch size whose estimate in `precision` fits in budget_bytes (0 if none does).
BRAIN_API std::uint64_t largest_batch_within(const std::vector<LayerSpec>& layers, std::uint64_t budget_bytes,
                                             Precision precision);

// Host memory, in bytes, that training a network of this shape takes, from the shapes alone (saturating):
// `network_copies` copies of its parameters and optimizer state, the core's standardised copy of the features
// when `standardized`, and on the CPU backend the session's tensors (estimate_tensor_memory) and its copy of the
// data set. TrainingSession checks the part after the network (network_copies 0) before it opens; a caller that
// is about to build a large network checks the whole first.
BRAIN_API std::uint64_t training_host_memory_bytes(const std::vector<LayerSpec>& layers, const Optimizer& optimizer,
                                                   std::uint64_t rows, std::uint64_t batch_size, bool standardized,
                                                   const TrainingBackend& backend,
                                                   std::uint32_t network_copies = 1);

// Host memory this process may still allocate, in bytes: the smallest of the kernel's MemAvailable and what the
// address-space limit (ulimit -v), the data-segment limit (ulimit -d) and the cgroup's memory.max leave. Nothing
// when none of them can be read.
BRAIN_API std::optional<std::uint64_t> host_memory_available_bytes();

// Throws AllocationFailed when `bytes` exceed host_memory_available_bytes(): "<what> needs X of host memory, but
// only Y is available (limited by ...); <advice>".
BRAIN_API void require_host_memory(std::uint64_t bytes, const std::string& what, const std::string& advice);

} // namespace brain

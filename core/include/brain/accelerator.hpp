// accelerator_doctor and estimate_tensor_memory_mib: the chapter's pre-flight checks.
#pragma once

#include <brain/export.hpp>

#include <brain/backend.hpp>
#include <brain/network.hpp>
#include <brain/stats.hpp>

#include <cstdint>
#include <optional>

namespace brain {

// Probe the backend's device under its budget: name, revision, memory, and real GEMM, kernel and allocation
// tests. std::nullopt for the CPU backend (nothing to probe). Throws the plugin's error (e.g.
// DriverUnavailable, DeviceNotFound, MetalFeatureDisabled) when the device cannot be probed at all.
BRAIN_API std::optional<AcceleratorReport> accelerator_doctor(const TrainingBackend& backend);

// Upper bound, in bytes, of the tensors a session allocates for this network and batch size: four copies of
// every parameter (weights, gradients, two optimizer moments), the batch's inputs and targets, and for each
// layer its pre-activations, activations and deltas, plus a fixed 64 KiB for scalars and alignment.
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

} // namespace brain

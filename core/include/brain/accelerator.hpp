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
// layer its pre-activations, activations and deltas, plus a fixed 64 KiB for scalars and alignment. Computed by the
// SDK's brain/session_budget.hpp (sdk::estimate_tensor_bytes), which plugins use: the two agree byte for byte. The
// data set is not part of it (the residency rule is stated in that header).
BRAIN_API std::uint64_t estimate_tensor_memory_bytes(const Network& network, std::size_t batch_size);
// The same, rounded up to whole MiB (the chapter's function).
BRAIN_API std::uint64_t estimate_tensor_memory_mib(const Network& network, std::size_t batch_size);
// The largest batch size whose estimate fits in budget_bytes (0 if none does).
BRAIN_API std::size_t largest_batch_within(const Network& network, std::uint64_t budget_bytes);

} // namespace brain

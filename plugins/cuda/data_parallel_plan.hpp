// The arithmetic of data parallelism, free of CUDA: how a batch's rows are shared among devices, which parameter
// ranges form the gradient buckets that are all-reduced as the backward pass produces them, and whether data
// parallelism pays for a session.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace brain::cuda {

// The most devices of one process that one session trains on together (its capabilities' max_devices).
inline constexpr std::uint32_t max_data_parallel_devices = 64;

// One device's share of a batch: positions [first, first + rows) of the batch, relative to the batch's start.
struct RowShare {
    std::uint64_t first = 0;
    std::uint64_t rows = 0;
};

// Split `rows` rows among `parts` devices in order: the first rows % parts devices get one row more, so the shares
// differ by at most one row and concatenate to the batch in its seeded order. A share may be empty (rows < parts).
std::vector<RowShare> split_rows(std::uint64_t rows, std::uint32_t parts);

// A layer's parameters in the flat layout (W then b, layers in order): [offset, offset + count) floats.
struct ParameterRange {
    std::uint64_t offset = 0;
    std::uint64_t count = 0;
};

// A gradient bucket: the layers [first_layer, last_layer] whose gradients it carries, as one contiguous range of
// the flat gradient, and the layer whose gradient completes it in the backward pass (the lowest, first_layer).
struct GradientBucket {
    std::uint64_t offset = 0;
    std::uint64_t count = 0; // floats
    std::uint32_t first_layer = 0;
    std::uint32_t last_layer = 0;
};

// Buckets in the order the backward pass completes them (output layer first). Consecutive layers share a bucket
// while it stays within bucket_floats; a layer larger than that is a bucket of its own (its gradient appears at
// once, so splitting it would add calls without adding overlap). bucket_floats 0 means one bucket for everything.
// The buckets cover every parameter exactly once.
std::vector<GradientBucket> plan_buckets(const std::vector<ParameterRange>& layers, std::uint64_t bucket_floats);

// How a session's devices are used: the BRAIN_CUDA_DATA_PARALLEL setting ("auto", "always" or "never").
enum class DataParallelPolicy { Auto, Always, Never };

// Parse the setting; nullptr or "" is Auto. INVALID_ARGUMENT naming the value otherwise.
DataParallelPolicy parse_data_parallel_policy(const char* setting);

// The decision for one session. `fused_shape`: the network and batch are what the fused epoch kernel runs on one
// device (narrow layers, batch at most 1024, float32): a step takes microseconds there, less than one all-reduce.
struct DataParallelDecision {
    bool parallel = false; // train on every listed device; otherwise on the first only
    std::string reason;    // why, for the debug log
};
DataParallelDecision decide_data_parallel(DataParallelPolicy policy, std::uint32_t local_devices,
                                          std::int32_t world_size, bool fused_shape);

} // namespace brain::cuda

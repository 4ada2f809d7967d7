// Splits, buckets and the per-session decision of data parallelism (data_parallel_plan.hpp).
#include "data_parallel_plan.hpp"

#include <brain/plugin_sdk.hpp>

namespace brain::cuda {

std::vector<RowShare> split_rows(std::uint64_t rows, std::uint32_t parts) {
    if (parts == 0) sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "a batch cannot be split among 0 devices");
    std::vector<RowShare> out(parts);
    const std::uint64_t base = rows / parts, extra = rows % parts;
    std::uint64_t first = 0;
    for (std::uint32_t d = 0; d < parts; ++d) {
        out[d].first = first;
        out[d].rows = base + (d < extra ? 1 : 0);
        first += out[d].rows;
    }
    return out;
}

std::vector<GradientBucket> plan_buckets(const std::vector<ParameterRange>& layers, std::uint64_t bucket_floats) {
    std::vector<GradientBucket> out;
    for (std::size_t i = layers.size(); i-- > 0;) {
        const ParameterRange& layer = layers[i];
        if (i + 1 < layers.size() && layer.offset + layer.count != layers[i + 1].offset)
            sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "layer ", i, "'s parameters [", layer.offset, ", ",
                      layer.offset + layer.count, ") do not end where layer ", i + 1, "'s begin (",
                      layers[i + 1].offset, ")");
        const bool joins = !out.empty() && (bucket_floats == 0 || out.back().count + layer.count <= bucket_floats);
        if (joins) {
            // Backward order: this layer lies just below the bucket's range.
            out.back().offset = layer.offset;
            out.back().count += layer.count;
            out.back().first_layer = static_cast<std::uint32_t>(i);
        } else {
            out.push_back(
                {layer.offset, layer.count, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i)});
        }
    }
    return out;
}

DataParallelPolicy parse_data_parallel_policy(const char* setting) {
    const std::string value = setting ? setting : "";
    if (value.empty() || value == "auto") return DataParallelPolicy::Auto;
    if (value == "always" || value == "1") return DataParallelPolicy::Always;
    if (value == "never" || value == "0") return DataParallelPolicy::Never;
    sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "BRAIN_CUDA_DATA_PARALLEL is \"", value,
              "\"; expected auto, always or never");
}

DataParallelDecision decide_data_parallel(DataParallelPolicy policy, std::uint32_t local_devices,
                                          std::int32_t world_size, bool fused_shape) {
    if (world_size > 1)
        return {true, "data parallel across " + std::to_string(world_size) +
                          " processes (every rank trains its share of each batch)"};
    if (local_devices > 1 && policy == DataParallelPolicy::Never)
        return {false, "BRAIN_CUDA_DATA_PARALLEL=never: training on the first listed device only"};
    if (policy == DataParallelPolicy::Always)
        return {true, "BRAIN_CUDA_DATA_PARALLEL=always: data parallel over " + std::to_string(local_devices) +
                          " device(s) through NCCL"};
    if (local_devices <= 1) return {false, "one device"};
    if (fused_shape)
        return {false,
                "data parallelism does not pay for this session: the network and batch run on the fused epoch "
                "kernel, whose steps take microseconds, less than one all-reduce between devices; training "
                "on the first listed device only (BRAIN_CUDA_DATA_PARALLEL=always forces it)"};
    return {true, "data parallel over " + std::to_string(local_devices) + " devices through NCCL"};
}

} // namespace brain::cuda

// Layer plans and layer masks for the CUDA plugin's host-side rules (row shares, tile heights), tested without a
// GPU.
#pragma once

#include <brain/session_plan.hpp>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace brain::test {

// Layers of widths inputs, hidden..., outputs, laid out as the plan lays them out.
inline std::vector<sdk::LayerPlan> layers_of(const std::vector<std::size_t>& widths) {
    std::vector<sdk::LayerPlan> out;
    std::size_t offset = 0;
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
        sdk::LayerPlan layer;
        layer.inputs = widths[l];
        layer.outputs = widths[l + 1];
        layer.weight_offset = offset;
        offset += layer.inputs * layer.outputs;
        layer.bias_offset = offset;
        offset += layer.outputs;
        out.push_back(layer);
    }
    return out;
}

// The bits of layers first..last.
inline std::uint32_t bits(unsigned first, unsigned last) {
    std::uint32_t mask = 0;
    for (unsigned l = first; l <= last; ++l) mask |= 1u << l;
    return mask;
}

} // namespace brain::test

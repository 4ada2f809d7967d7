// Networks the tests build from a list of dense layers.
#pragma once

#include <brain/network.hpp>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace brain::test {

// A network of dense layers (units, activation) on `inputs` features, initialised from `seed`, with `optimizer`
// (the builder's default when none is given).
inline Network dense_network(const std::vector<std::pair<std::size_t, Activation>>& layers, std::size_t inputs,
                             std::uint64_t seed, const std::optional<Optimizer>& optimizer = std::nullopt) {
    auto b = Network::builder().input_size(inputs).seed(seed);
    for (const auto& [units, act] : layers) b.dense(units, act);
    if (optimizer) b.optimizer(*optimizer);
    return b.build();
}

} // namespace brain::test

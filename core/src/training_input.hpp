// Internal: the checks every training entry point makes on a network, a data set and a configuration.
#pragma once

#include <brain/dataset.hpp>
#include <brain/network.hpp>
#include <brain/types.hpp>

namespace brain::detail {

// Throw InvalidData / InvalidArgument naming the mismatch between the network, the data and the config.
void validate_training_input(const Network& network, const Dataset& data, const TrainConfig& config);

} // namespace brain::detail

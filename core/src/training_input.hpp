// Internal: the checks every training entry point makes on a network, a data set and a configuration.
#pragma once

#include <brain/dataset.hpp>
#include <brain/network.hpp>
#include <brain/types.hpp>
#include <cstdint>
#include <string>

namespace brain::detail {

// Throw InvalidData / InvalidArgument naming the mismatch between the network, the data and the config.
void validate_training_input(const Network& network, const Dataset& data, const TrainConfig& config);

// Categorical cross-entropy's targets: each of `rows` rows of `cols` (row-major) non-negative and summing to 1
// within 1e-3, else InvalidData naming `origin` (empty: the data set) and the row (`first_row` + its index).
void check_probability_rows(const float* targets, std::size_t rows, std::size_t cols, std::uint64_t first_row,
                            const std::string& origin);

} // namespace brain::detail

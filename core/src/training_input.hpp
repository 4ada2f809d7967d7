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

// Binary cross-entropy's targets: every value of `rows` rows of `cols` from 0 to 1 (labels or probabilities), else
// InvalidData naming `origin`, the row and the column.
void check_unit_interval_targets(const float* targets, std::size_t rows, std::size_t cols, std::uint64_t first_row,
                                 const std::string& origin);

// The target check of `loss` (categorical and binary cross-entropy; none for mean squared error) over those rows.
void check_targets(Loss loss, const float* targets, std::size_t rows, std::size_t cols, std::uint64_t first_row,
                   const std::string& origin);

} // namespace brain::detail

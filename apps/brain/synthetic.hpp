// Synthetic data sets the project ships as generators: `brain generate` writes them as CSV and the examples
// build them in memory, so nothing depends on downloaded data.
#pragma once

#include <brain/dataset.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace brain::app {

// Which data set to generate.
enum class SyntheticKind {
    Regression, // x0..x5 uniform in [-2, 2]; y = a smooth nonlinear function of them + small noise
    Churn,      // churn-like customer table; label column "churned" with values yes/no
    Xor,        // x0, x1 uniform in [-1, 1]; y = 1 when exactly one of them is positive, else 0
};

// Parse "regression", "churn" or "xor"; throws Error(InvalidArgument) naming the accepted kinds.
SyntheticKind parse_synthetic_kind(std::string_view text);

// The data set as CSV text (header row, then `rows` rows), fully determined by `seed`.
std::string generate_csv(SyntheticKind kind, std::size_t rows, std::uint64_t seed);
// The same text handed to `sink` in pieces of about 1 MiB, so that any number of rows needs bounded memory.
void generate_csv(SyntheticKind kind, std::size_t rows, std::uint64_t seed,
                  const std::function<void(std::string_view)>& sink);

// The chapter's regression task in memory: `inputs` standard-normal features and one target, a sum of smooth
// nonlinear terms of them plus noise (used by the examples, whose networks take input_size 16).
Dataset make_regression(std::size_t rows, std::size_t inputs, std::uint64_t seed);

} // namespace brain::app

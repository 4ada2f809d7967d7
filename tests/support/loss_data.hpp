// Data sets the tests train on: features in [-1, 1] and targets suited to a loss.
#pragma once

#include <brain/brain.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace brain::test {

// `rows` rows of `inputs` features; targets suited to `loss` over `outputs` columns (one-hot for CCE, 0/1 for
// BCE, a smooth function for MSE).
inline Dataset loss_data(std::size_t rows, std::size_t inputs, std::size_t outputs, Loss loss, std::uint64_t seed) {
    Random rng(seed);
    const auto noise_next = [&rng] { return static_cast<float>(rng.uniform(-1.0, 1.0)); };
    Matrix x(rows, inputs), y(rows, outputs);
    for (std::size_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (std::size_t c = 0; c < inputs; ++c) {
            x(r, c) = noise_next();
            s += x(r, c) * static_cast<float>(c % 3 == 0 ? 1 : -1);
        }
        for (std::size_t k = 0; k < outputs; ++k) {
            const float v = std::sin(s + static_cast<float>(k)) + 0.1f * noise_next();
            if (loss == Loss::MeanSquaredError) y(r, k) = v;
            if (loss == Loss::BinaryCrossEntropy) y(r, k) = v > 0.0f ? 1.0f : 0.0f;
        }
        if (loss == Loss::CategoricalCrossEntropy)
            y(r, static_cast<std::size_t>(std::fabs(s) * 7.0f) % outputs) = 1.0f;
    }
    return Dataset(std::move(x), std::move(y));
}

} // namespace brain::test

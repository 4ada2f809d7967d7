// What the learning-rate tests share: a small regression task and its network, and the comparison of a session
// given per-step rates with one given the same rates through set_learning_rate.
#pragma once

#include "support/catch.hpp"
#include "support/networks.hpp"

#include <brain/brain.hpp>
#include <cstddef>
#include <vector>

namespace brain::test {

// `rows` rows of three features in [-0.5, 0.5) and a linear target.
inline Dataset wave(std::size_t rows) {
    Matrix x(rows, 3), y(rows, 1);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < 3; ++c) x(r, c) = static_cast<float>((r * (c + 3)) % 17) / 17.0f - 0.5f;
        y(r, 0) = x(r, 0) * 0.7f - x(r, 2) * 0.4f;
    }
    return Dataset(std::move(x), std::move(y));
}

// The network that learns wave(): one tanh layer of 12 units.
inline Network wave_network(const Optimizer& optimizer) {
    return dense_network({{12, Activation::Tanh}, {1, Activation::Linear}}, 3, 4, optimizer);
}

// An epoch per rate of `rates`: by_epoch through set_learning_rate, by_step through that rate for each of its
// `steps` steps; each epoch's loss must be the same.
inline void check_epoch_rates(TrainingSession& by_epoch, TrainingSession& by_step, const std::vector<float>& rates,
                              std::size_t steps) {
    for (float rate : rates) {
        by_epoch.set_learning_rate(rate);
        const float a = by_epoch.train_epoch();
        by_step.set_step_learning_rates(std::vector<float>(steps, rate));
        const float b = by_step.train_epoch();
        CHECK(a == b);
    }
}

// An epoch at the per-step `varying` rates on both sessions, then one more in which by_step keeps the last of them
// and by_epoch is given it through set_learning_rate.
inline void vary_then_hold(TrainingSession& by_epoch, TrainingSession& by_step, const std::vector<float>& varying) {
    by_epoch.set_step_learning_rates(varying);
    by_epoch.train_epoch();
    by_epoch.set_learning_rate(varying.back());
    by_epoch.train_epoch();
    by_step.set_step_learning_rates(varying);
    by_step.train_epoch();
    by_step.train_epoch();
}

// The two sessions' parameters, optimizer state and step must be the same.
inline void check_same_state(TrainingSession& a, TrainingSession& b) {
    const Checkpoint x = a.checkpoint();
    const Checkpoint y = b.checkpoint();
    CHECK(x.parameters == y.parameters);
    CHECK(x.optimizer_state == y.optimizer_state);
    CHECK(x.optimizer_step == y.optimizer_step);
}

} // namespace brain::test

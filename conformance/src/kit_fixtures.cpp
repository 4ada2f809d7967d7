// The data, network and session fixture the kit trains with: small enough to run in seconds on any backend,
// deep enough (three layers, tanh and ReLU) to expose a wrong gradient or batch order.
#include "kit_fixtures.hpp"

#include <brain/random.hpp>
#include <cmath>

namespace brain::conformance {

Dataset regression_data(std::size_t rows, std::size_t inputs, std::size_t outputs, std::uint64_t seed) {
    Matrix x(rows, inputs), y(rows, outputs);
    Random rng(seed);
    for (std::size_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (std::size_t c = 0; c < inputs; ++c) {
            x(r, c) = static_cast<float>(rng.uniform(-1.0, 1.0));
            s += x(r, c) * (c % 3 == 0 ? 1.0f : -0.5f);
        }
        for (std::size_t o = 0; o < outputs; ++o) y(r, o) = std::tanh(s + 0.3f * static_cast<float>(o));
    }
    return Dataset(std::move(x), std::move(y));
}

Network kit_network(const Optimizer& optimizer) {
    return Network::builder()
        .input_size(8)
        .dense(16, Activation::Tanh)
        .dense(12, Activation::Relu)
        .dense(3, Activation::Linear)
        .optimizer(optimizer)
        .seed(11)
        .build();
}

SessionFixture make_session_fixture(const PluginUnderTest& plugin, const ConformanceOptions& options) {
    return SessionFixture{plugin,
                          options,
                          options.budget_mib * 1024ull * 1024ull,
                          TrainingBackend::plugin(plugin.record.name, options.device, options.budget_mib),
                          regression_data(150, 8, 3, 5),
                          TrainConfig{3, 32, true, 99}};
}

} // namespace brain::conformance

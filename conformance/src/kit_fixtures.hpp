// What the conformance kit's checks share: the plugin under test, and the data, network and backend every
// session check trains with.
#pragma once

#include <brain/backend.hpp>
#include <brain/conformance.hpp>
#include <brain/dataset.hpp>
#include <brain/network.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugins.hpp>
#include <cstddef>
#include <cstdint>

namespace brain::conformance {

// The plugin under test: its load record and its function table (null until it loaded).
struct PluginUnderTest {
    PluginRecord record;
    const brain_plugin_api* api = nullptr;
};

// What the session checks share.
struct SessionFixture {
    const PluginUnderTest& plugin;
    const ConformanceOptions& options;
    std::uint64_t budget_bytes;
    TrainingBackend backend; // the plugin by name, on the device and budget under test
    Dataset data;            // 150 rows of a smooth 8 -> 3 regression
    TrainConfig config;      // 3 epochs of batches of 32, shuffled
};

// The session fixture for a plugin that loaded and resolves by name.
SessionFixture make_session_fixture(const PluginUnderTest& plugin, const ConformanceOptions& options);
// A smooth regression target over seeded features in [-1, 1): the same rows on every backend.
Dataset regression_data(std::size_t rows, std::size_t inputs, std::size_t outputs, std::uint64_t seed);
// The kit's 8 -> 16 tanh -> 12 relu -> 3 network, seed 11.
Network kit_network(const Optimizer& optimizer = Optimizer::adam(0.01f));

} // namespace brain::conformance

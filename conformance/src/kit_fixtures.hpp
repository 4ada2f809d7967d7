// What the conformance kit's checks share: the plugin under test (loaded lazily, in the process a check runs in),
// and the data, networks and backend the session checks train with.
#pragma once

#include <brain/backend.hpp>
#include <brain/conformance.hpp>
#include <brain/dataset.hpp>
#include <brain/network.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugins.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace brain::conformance {

// The plugin under test: its load record and its function table.
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
    TrainConfig config;      // 3 epochs of batches of 32 (the last of each epoch holds 22 rows), shuffled
};

// A finding a check passes back to the report besides its row (e.g. what the plugin declares it lacks).
using Fact = std::pair<std::string, std::string>;

// The kit as one check sees it. A check runs in a process of its own (or in the caller's), so everything it needs
// comes from here and is built on first use there: the calling process never loads the plugin.
class KitContext {
public:
    KitContext(const ConformanceOptions& options, std::function<PluginRecord()> load, std::filesystem::path file);

    const ConformanceOptions& options() const noexcept { return m_options; }
    // The plugin, loaded on first use (throws the loader's error).
    const PluginUnderTest& plugin();
    // The session fixture, built on first use.
    const SessionFixture& fixture();
    // What the plugin runs (its capabilities, or the ABI 1.0 set).
    const PluginCapabilities& capabilities() { return plugin().record.capabilities; }
    // Records a finding for the report.
    void fact(std::string key, std::string value) { m_facts.emplace_back(std::move(key), std::move(value)); }
    // The findings recorded since the last call.
    std::vector<Fact> take_facts() { return std::exchange(m_facts, {}); }
    // In a check's own process, before anything loads: the file under test first on BRAIN_PLUGIN_PATH.
    void prepare_check_process() const;

private:
    const ConformanceOptions& m_options;
    std::function<PluginRecord()> m_load;
    std::filesystem::path m_file;
    std::optional<PluginUnderTest> m_plugin;
    std::unique_ptr<SessionFixture> m_fixture;
    std::vector<Fact> m_facts;
};

// A smooth regression target over seeded features in [-1, 1): the same rows on every backend.
Dataset regression_data(std::size_t rows, std::size_t inputs, std::size_t outputs, std::uint64_t seed);
// Seeded features with 0/1 targets (for binary cross-entropy).
Dataset binary_data(std::size_t rows, std::size_t inputs, std::size_t outputs, std::uint64_t seed);
// Seeded features with one-hot targets of `classes` classes (for categorical cross-entropy).
Dataset class_data(std::size_t rows, std::size_t inputs, std::size_t classes, std::uint64_t seed);
// The kit's 8 -> 16 tanh -> 12 relu -> 3 network, seed 11.
Network kit_network(const Optimizer& optimizer = Optimizer::adam(0.01f));

// Parameters and per-epoch losses of a run agree with a reference run: the parameters within 1e-4 (norm-wise,
// relative), each epoch loss within 1e-6 + 1e-4 of the reference's. The kit's one tolerance (docs/sdk.md).
struct Agreement {
    bool agrees = false;
    double parameter_error = 0.0; // norm-wise relative error of the parameters
    std::string detail;           // what differs, when it does
};
Agreement compare_runs(const Network& trained, const FitReport& fit, const Network& reference,
                       const FitReport& reference_fit);

// The limit of the parameters' norm-wise relative error against the CPU reference.
inline constexpr double k_parameter_tolerance = 1e-4;

} // namespace brain::conformance
